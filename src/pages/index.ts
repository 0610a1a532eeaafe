/**
 * @module pages
 * The HTML pages: layout, texts, theme and the consent page. This index is what the rest of the
 * code imports; nothing outside the folder imports its other files.
 */
export { authorizationDetailItems, type DetailView } from './authorization_details.ts'
export {
  type GrantEntry,
  grantGonePage,
  grantsListPage,
  grantsSignInPage,
  revokeConfirmPage,
} from './grants.ts'
export { consentPage, logoutConfirmPage, noticeParagraph, scopeItems, type SelfRegisteredNotice } from './consent.ts'
export {
  ALERT_ICON,
  errorPage,
  hidden,
  loginPage,
  notFoundPage,
  page,
  pageHeaders,
  signedOutPage,
  textsOf,
  ThemeSchema,
  withClient,
} from './layout.ts'
export type { Theme } from './theme.ts'
