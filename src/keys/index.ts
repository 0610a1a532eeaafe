/**
 * @module keys
 * The signing keyring: keys in the store, rotation, and the key to sign with. This index is what
 * the rest of the code imports; nothing outside the folder imports its other files.
 */
export { createKeyring, type Keyring, type SigningKey } from './keyring.ts'
