/**
 * @module interaction/device_pages
 * The built-in pages of the device verification (RFC 8628 §3.3): the user-code form, the
 * confirmation naming the client (bidi-isolated) and the scopes with the user code to compare
 * (§5.4), and the pages saying what the device may do next. Every value is escaped.
 */
import {
  ALERT_ICON,
  hidden,
  noticeParagraph,
  page,
  scopeItems,
  textsOf,
  type Theme,
  withClient,
} from '../pages/index.ts'
import { escapeHtml as e } from '../http.ts'

export interface UserCodePageInput {
  action: string
  csrf: string
  /** Prefilled value (from `verification_uri_complete`, or what was typed). */
  userCode?: string
  /** Shown above the form (a wrong code, throttling, …); already the final text. */
  message?: string
}

/** The user-code form: POST with `user_code` and hidden `csrf`. */
export function userCodePage(
  theme: Theme,
  input: UserCodePageInput,
  init?: { status?: number; headers?: Headers },
): Response {
  const t = textsOf(theme)
  const error = input.message
    ? `<p class="error" role="alert" id="code-error">${ALERT_ICON}<span>${e(input.message)}</span></p>`
    : ''
  const invalid = input.message ? ' aria-invalid="true" aria-describedby="code-error"' : ''
  return page(
    theme,
    t.verifyTitle,
    `<p class="lead">${e(t.verifyIntro)}</p>${error}
<form method="post" action="${e(input.action)}">${hidden({ csrf: input.csrf })}
<div class="field"><label for="user_code">${e(t.userCodeLabel)}</label>
<input id="user_code" name="user_code" type="text" autocomplete="off" autocapitalize="characters" autocorrect="off" spellcheck="false" maxlength="64" required autofocus${invalid} value="${e(input.userCode ?? '')}"></div>
<div class="actions"><button class="primary" type="submit">${e(t.verifyButton)}</button></div>
</form>`,
    init,
  )
}

export interface DeviceConfirmPageInput {
  action: string
  uid: string
  csrf: string
  clientName: string
  scopes: string[]
  /** The user code, as shown on the device (`BCDF-GHJK`). */
  userCode: string
  /** Set for a client that registered itself. */
  selfRegistered?: { kind: 'dynamic' | 'metadata_document'; documentHost?: string }
}

/** How a client registered itself, for the notice of a confirmation page. */
export type SelfRegistered = { kind: 'dynamic' | 'metadata_document'; documentHost?: string }

/**
 * The notice above a confirmation page (device, CIBA) for a client that registered itself (the
 * operator has not reviewed it), in the page's own texts; '' for a client the host registered.
 */
export function registrationNotice(
  registered: SelfRegistered | undefined,
  clientName: string,
  texts: { dynamic: string; metadataDocument: string },
): string {
  if (!registered) return ''
  const template = registered.kind === 'metadata_document' ? texts.metadataDocument : texts.dynamic
  return noticeParagraph(template, { client: clientName, document: registered.documentHost ?? '' })
}

/** The confirmation: client, scopes and user code, with Approve first and Deny. */
export function deviceConfirmPage(theme: Theme, input: DeviceConfirmPageInput, init?: { headers?: Headers }): Response {
  const t = textsOf(theme)
  const notice = registrationNotice(input.selfRegistered, input.clientName, {
    dynamic: t.deviceSelfRegisteredNotice,
    metadataDocument: t.deviceMetadataDocumentNotice,
  })
  return page(
    theme,
    t.deviceTitle,
    `${notice}<p id="device-intro">${withClient(t.deviceIntro, input.clientName)}</p><ul class="scopes" aria-labelledby="device-intro">${scopeItems(input.scopes)}</ul>
<p>${e(t.deviceCodeCheck)} <strong class="code" id="user-code">${e(input.userCode)}</strong></p>
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, action: 'confirm' })}
<div class="actions"><button class="primary" type="submit" name="decision" value="approve" autofocus>${e(t.approveButton)}</button>
<button class="secondary" type="submit" name="decision" value="deny">${e(t.denyButton)}</button></div></form>`,
    init,
  )
}

/** After the decision: the device may continue, or it was denied; either way this window may close. */
export function deviceDonePage(theme: Theme, approved: boolean, init?: { headers?: Headers }): Response {
  const t = textsOf(theme)
  const [title, message] = approved
    ? [t.deviceApprovedTitle, t.deviceApprovedMessage]
    : [t.deviceDeniedTitle, t.deviceDeniedMessage]
  return page(theme, title, `<p class="center" role="status">${e(message)}</p>`, init)
}
