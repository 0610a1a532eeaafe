/**
 * @module service
 * The Context builder behind `createTokenService`.
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { createServiceContext } from './create_context.ts'
