/**
 * @module logout
 * Back-channel logout delivery (OpenID Connect Back-Channel Logout 1.0).
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { startBackchannelLogout } from './backchannel.ts'
