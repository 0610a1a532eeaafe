/**
 * @module service
 * The Context builder behind `createTokenService`. This index is what the rest of the code
 * imports; nothing outside the folder imports its other files.
 */
export { createServiceContext } from './create_context.ts'
export { type HostGrants, hostGrants } from './grants.ts'
