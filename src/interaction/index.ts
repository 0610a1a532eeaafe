/**
 * @module interaction
 * The sign-in and consent flow between /connect/authorize and the host's sign-in hook, and the
 * device flow's pages. This index is what the rest of the code imports; nothing outside the folder
 * imports its other files.
 */
export { browserCookieName, readCookie, setCookie } from './cookies.ts'
export { decideDevice, deviceNotice, type DeviceOutcome, deviceRequestOf, recordSignIn } from './device.ts'
export { deviceConfirmPage, deviceDonePage } from './device_pages.ts'
export { isUserCodeFormGenuine, submitUserCode, userCodeForm } from './device_user_code.ts'
export {
  browserBinding,
  claimsNeedingConsent,
  completeInteraction,
  endSession,
  issueCodeRedirect,
  loadSession,
  startInteraction,
} from './flow.ts'
export { completeHostInteraction, pendingInteraction } from './host.ts'
export { detailsNeedConsent } from './detail_consent.ts'
export { checkPassword } from './password.ts'
export type { AuthorizationRequest } from './request.ts'
export {
  type CibaDecisionInput,
  type CibaDecisionOutcome,
  cibaApprovalUrl,
  cibaRequestOfReference,
  decideCiba,
  notifyUser,
} from './ciba.ts'
export { cibaApprovalStep, startCibaApproval, submitCibaApproval } from './ciba_approval.ts'
