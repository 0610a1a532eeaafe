/**
 * @module accounts
 * Users: the built-in directory of the embedded sign-in and the host's account hook. This index is
 * what the rest of the code imports; nothing outside the folder imports its other files.
 */
export { type AccountProvider, type AccountRequest, type AddressClaim, type UserConfig, UserSchema } from './schema.ts'
export { createUserDirectory, type UserDirectory } from './users.ts'
