/**
 * @module clients
 * The client registry: records, secrets, permissions, registration metadata, metadata documents
 * and keys. This index is what the rest of the code imports; nothing outside the folder imports
 * its other files.
 */
export {
  type ClientKeyOwner,
  type ClientKeySource,
  createClientKeySource,
  publicSignatureKeys,
} from './jwks.ts'
export {
  badMetadata,
  clientFields,
  parseClientMetadata,
  type RegisteredClientMetadata,
  type RegistrationPolicy,
  withoutMetadataFields,
} from './metadata.ts'
export { createMetadataDocumentResolver, type MetadataDocumentResolver } from './metadata_document.ts'
export { Permissions, scopePermission } from './permissions.ts'
export {
  type AddedSecret,
  type ClientInfo,
  hostOf,
  isConfidential,
  isSelfRegistered,
  secretId,
  type SecretInfo,
  selfRegistrationNotice,
} from './record.ts'
export {
  type ClientRegistration,
  ClientRegistrationSchema,
  parseClientRegistration,
  type ParsedClientRegistration,
} from './registration.ts'
export { type ClientRegistry, createClientRegistry } from './registry.ts'
export { generateSecret } from './secrets.ts'
export { isForbiddenScheme, SCHEME_NAME } from './self_registered_redirects.ts'
