/**
 * @module keys
 * The signing keyring: keys in the store, rotation, and the key to sign with.
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { createKeyring, type Keyring, type SigningKey } from './keyring.ts'
