/**
 * @module logout
 * Back-channel logout delivery (OpenID Connect Back-Channel Logout 1.0). This index is what the
 * rest of the code imports; nothing outside the folder imports its other files.
 */
export { callbackOutbound, startBackchannelLogout } from './backchannel.ts'
