/**
 * @module accounts
 * Users: the built-in directory of the embedded sign-in and the host's account hook.
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { type AccountProvider, type AccountRequest, type AddressClaim, type UserConfig, UserSchema } from './schema.ts'
export { createUserDirectory, type UserDirectory } from './users.ts'
