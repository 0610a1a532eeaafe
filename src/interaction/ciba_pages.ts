/**
 * @module interaction/ciba_pages
 * The built-in pages of the CIBA approval (OpenID CIBA Core 1.0 §7.2): the confirmation naming the
 * client (bidi-isolated), the binding message to compare with what the application shows, the
 * scopes and every authorization detail (RFC 9396: type, description, every field), and the page
 * after the decision. Every value is escaped.
 */
import {
  authorizationDetailItems,
  type DetailView,
  hidden,
  page,
  scopeItems,
  textsOf,
  type Theme,
  withClient,
} from '../pages/index.ts'
import { escapeHtml as e } from '../http.ts'
import { registrationNotice, type SelfRegistered } from './device_pages.ts'

export interface CibaConfirmPageInput {
  action: string
  uid: string
  csrf: string
  clientName: string
  scopes: string[]
  /** The authorization details (RFC 9396) asked for, each shown with every field. */
  authorizationDetails?: readonly DetailView[]
  bindingMessage?: string
  /** Set for a client that registered itself (phishing: the end-user is told nobody reviewed it). */
  selfRegistered?: SelfRegistered
}

/** The confirmation: client, scopes and binding message, with Approve first and Deny. */
export function cibaConfirmPage(theme: Theme, input: CibaConfirmPageInput): Response {
  const t = textsOf(theme)
  const binding =
    input.bindingMessage === undefined
      ? ''
      : `<p>${e(t.cibaBindingCheck)} <strong class="code" id="binding-message"><bdi>${e(input.bindingMessage)}</bdi></strong></p>`
  const notice = registrationNotice(input.selfRegistered, input.clientName, {
    dynamic: t.cibaSelfRegisteredNotice,
    metadataDocument: t.cibaMetadataDocumentNotice,
  })
  return page(
    theme,
    t.cibaTitle,
    `${notice}<p id="ciba-intro">${withClient(t.cibaIntro, input.clientName)}</p><ul class="scopes" aria-labelledby="ciba-intro">${scopeItems(input.scopes)}${authorizationDetailItems(input.authorizationDetails ?? [])}</ul>
${binding}
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, action: 'confirm' })}
<div class="actions"><button class="primary" type="submit" name="decision" value="approve" autofocus>${e(t.approveButton)}</button>
<button class="secondary" type="submit" name="decision" value="deny">${e(t.denyButton)}</button></div></form>`,
  )
}

/** After the decision: the application may continue, or it was denied; either way this window may close. */
export function cibaDonePage(theme: Theme, approved: boolean): Response {
  const t = textsOf(theme)
  const [title, message] = approved
    ? [t.cibaApprovedTitle, t.cibaApprovedMessage]
    : [t.cibaDeniedTitle, t.cibaDeniedMessage]
  return page(theme, title, `<p class="center" role="status">${e(message)}</p>`)
}
