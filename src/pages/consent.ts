/**
 * @module pages/consent
 * The built-in pages where the end-user decides about a client: consent (which scopes, and for a
 * self-registered client where Allow sends the browser) and the logout confirmation (which, for a
 * self-registered client's post-logout redirect, names the host first: #27 item 3). Client names
 * and hosts are bidi-isolated (`isolated`, #27 item 6).
 */
import type { Theme } from './theme.ts'
import { escapeHtml as e } from '../http.ts'
import { authorizationDetailItems, type DetailView } from './authorization_details.ts'
import { ALERT_ICON, CHECK_ICON, type PageTexts, hidden, isolated, page, textsOf, withClient } from './layout.ts'

export interface ConsentPageInput {
  action: string
  uid: string
  csrf: string
  clientName: string
  scopes: string[]
  /** Claims requested on their own (OpenID Connect Core §5.5) that Allow releases too. */
  claims?: string[]
  /** Authorization details (RFC 9396) that Allow approves, each shown with every field. */
  authorizationDetails?: DetailView[]
  /** Set for a client that registered itself (see `selfRegistrationNotice` in src/clients/record.ts). */
  selfRegistered?: SelfRegisteredNotice
}

/** What the consent page says about a client that registered itself. */
export interface SelfRegisteredNotice {
  kind: 'dynamic' | 'metadata_document'
  /** Host (or private-use scheme) of the redirect URI the browser returns to. */
  redirectHost: string
  /** Host of the client's metadata document (metadata-document clients). */
  documentHost?: string
}

/** The notice about a self-registered client: escaped, with client, host and document isolated in bold. */
function noticeOf(t: PageTexts, clientName: string, notice: SelfRegisteredNotice): string {
  const template = notice.kind === 'metadata_document' ? t.metadataDocumentNotice : t.selfRegisteredNotice
  return noticeParagraph(template, {
    client: clientName,
    host: notice.redirectHost,
    document: notice.documentHost ?? notice.redirectHost,
  })
}

/** A notice paragraph: `template` escaped, its `{client}`, `{host}` and `{document}` isolated in bold. */
export function noticeParagraph(template: string, values: Record<string, string>): string {
  const html = e(template).replace(/\{(client|host|document)\}/g, (_, key: string) => isolated(values[key] ?? ''))
  return `<p class="notice" id="self-registered" role="note">${ALERT_ICON}<span>${html}</span></p>`
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are',
  profile: 'See your name and basic profile',
  email: 'See your email address',
  address: 'See your postal address',
  phone: 'See your phone number',
  offline_access: 'Stay signed in to the application when you are not using it',
}

/** The list items of `scopes`, escaped, each with its description where one is known. */
export function scopeItems(scopes: readonly string[]): string {
  return scopes
    .map((scope) => {
      const text = SCOPE_TEXT[scope]
      const label = text === undefined ? e(`Use ${scope}`) : `${e(text)} <code>${e(scope)}</code>`
      return `<li data-scope="${e(scope)}">${CHECK_ICON}<span>${label}</span></li>`
    })
    .join('')
}

/**
 * The consent form: it lists every scope, authorization detail and claim that Allow grants, and Allow grants exactly
 * those. The approving button comes first.
 */
export function consentPage(theme: Theme, input: ConsentPageInput): Response {
  const t = textsOf(theme)
  const items = scopeItems(input.scopes) + authorizationDetailItems(input.authorizationDetails ?? [])
  const claims = (input.claims ?? [])
    .map(
      (claim) =>
        `<li data-claim="${e(claim)}">${CHECK_ICON}<span>${e('See your')} <code>${e(claim)}</code></span></li>`,
    )
    .join('')
  return page(
    theme,
    t.consentTitle,
    `${input.selfRegistered ? noticeOf(t, input.clientName, input.selfRegistered) : ''}<p id="consent-intro">${withClient(t.consentIntro, input.clientName)}</p><ul class="scopes" aria-labelledby="consent-intro">${items}${claims}</ul>
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, action: 'consent' })}
<div class="actions"><button class="primary" type="submit" name="decision" value="allow" autofocus>${e(t.allowButton)}</button>
<button class="secondary" type="submit" name="decision" value="deny">${e(t.denyButton)}</button></div></form>`,
  )
}

export interface LogoutConfirmPageInput {
  action: string
  uid: string
  csrf: string
  /**
   * Set when the logout redirects to a self-registered client's post_logout_redirect_uri: the page
   * names the client and the host before the browser goes there (#27 item 3).
   */
  redirect?: { clientName: string; host: string }
  /** False when the browser has no session: the page says so and only offers to continue. Default true. */
  signedIn?: boolean
}

/** The logout confirmation: the approving button comes first. */
export function logoutConfirmPage(theme: Theme, input: LogoutConfirmPageInput): Response {
  const t = textsOf(theme)
  const form = hidden({ uid: input.uid, csrf: input.csrf, confirm: 'yes' })
  const redirect = input.redirect
  if (input.signedIn === false && redirect) {
    return page(
      theme,
      t.signedOutTitle,
      `<p class="center">${e(t.signedOutMessage)}</p>${noticeParagraph(t.signedOutRedirectNotice, { client: redirect.clientName, host: redirect.host })}
<form method="post" action="${e(input.action)}">${form}
<div class="actions"><button class="primary" type="submit" name="decision" value="yes">${e(t.continueButton)}</button></div></form>`,
    )
  }
  const notice = redirect
    ? noticeParagraph(t.logoutRedirectNotice, { client: redirect.clientName, host: redirect.host })
    : ''
  return page(
    theme,
    t.signOutTitle,
    `${notice}<p class="center">${e(t.signOutQuestion)}</p>
<form method="post" action="${e(input.action)}">${form}
<div class="actions"><button class="primary" type="submit" name="decision" value="yes" autofocus>${e(t.signOutButton)}</button>
<button class="secondary" type="submit" name="decision" value="no">${e(t.staySignedInButton)}</button></div></form>`,
  )
}
