/**
 * @module pages/layout
 * The built-in HTML pages: sign-in, signed-out, error and not found, and what every page shares
 * (the frame, the theme, the texts; consent and logout confirmation are in `consent.ts`). Every value
 * is escaped; responses carry a strict CSP (nonce-bound inline style, no script, no framing).
 * Every value a client supplied (its name, its redirect and document hosts) is bidi-isolated in
 * `<bdi>`, so control characters such as a trailing U+202E cannot reorder the text around it, the
 * redirect host included (#27 item 6).
 *
 * The host themes them with the `theme` option (validated by `ThemeSchema`): product name, logo,
 * colours (checked against a strict CSS colour syntax, so nothing but a colour reaches the style
 * sheet), colour scheme, language and every visible text. Form field names (`username`,
 * `password`, `uid`, `csrf`, `action`, `decision`, `confirm`, `user_code`) are a public contract
 * and never change.
 */
import type { Theme } from './theme.ts'
import * as v from 'valibot'
import { escapeHtml as e } from '../http.ts'
import { randomToken } from '../crypto/index.ts'
import { GRANTS_CSS, GRANTS_TEXTS } from './grants_theme.ts'

/**
 * A CSS colour, strictly: `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`, a colour function of numbers
 * (`rgb(47 91 211)`, `hsl(220deg 65% 50% / .9)`, `oklch(…)`) or a named colour. No `;`, braces,
 * quotes, backslashes, `var()` or `url()` can pass, so a value cannot leave its declaration.
 */
export const CSS_COLOR =
  /^(?:#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})|(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch)\((?:[0-9. ,/%+-]|deg|grad|rad|turn|none){1,80}\)|[a-z]{3,30})$/i

const HEX_COLOR = /^#(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i

const color = v.pipe(v.string(), v.regex(CSS_COLOR, 'must be a CSS colour (#hex, rgb(), hsl(), … or a name)'))
const text = v.pipe(v.string(), v.minLength(1), v.maxLength(300))

/** The texts of the built-in pages; `{client}` is replaced by the client's name (in bold). */
export const DEFAULT_TEXTS = {
  signInTitle: 'Sign in',
  signInSubtitle: 'to continue to {client}',
  usernameLabel: 'Username',
  passwordLabel: 'Password',
  signInButton: 'Sign in',
  cancelButton: 'Cancel',
  consentTitle: 'Allow access?',
  consentIntro: '{client} asks to:',
  selfRegisteredNotice:
    '{client} registered itself: the operator of this service has not reviewed it. Allowing sends you to {host}.',
  metadataDocumentNotice:
    '{client} registered itself with a metadata document at {document}: the operator of this service has not reviewed it. Allowing sends you to {host}.',
  allowButton: 'Allow',
  denyButton: 'Deny',
  signOutTitle: 'Sign out?',
  signOutQuestion: 'Do you want to sign out?',
  signOutButton: 'Sign out',
  staySignedInButton: 'Stay signed in',
  logoutRedirectNotice:
    '{client} registered itself: the operator of this service has not reviewed it. Signing out sends you to {host}.',
  signedOutRedirectNotice:
    '{client} registered itself: the operator of this service has not reviewed it. Continue only if you trust {host}.',
  continueButton: 'Continue',
  signedOutTitle: 'Signed out',
  signedOutMessage: 'You have been signed out.',
  errorTitle: 'Something went wrong',
  errorHint: 'Return to the application and try again.',
  notFoundTitle: 'Page not found',
  notFoundMessage: 'There is nothing at this address. Check the link, or return to the application.',
  verifyTitle: 'Connect a device',
  verifyIntro: 'Enter the code shown on your device.',
  userCodeLabel: 'Code',
  verifyButton: 'Continue',
  userCodeInvalid: 'This code is not valid or has expired. Check the code on your device and try again.',
  userCodeMalformed: 'A code has 8 letters, such as BCDF-GHJK. Check the code on your device and try again.',
  userCodeThrottled: 'Too many wrong codes. Try again in {minutes} min.',
  userCodeUsed: 'This code was already used. Start again on your device to get a new one.',
  userCodeExpired: 'This code is no longer valid. Start again on your device to get a new one.',
  deviceTitle: 'Allow this device?',
  deviceIntro: 'A device is signing in to {client}. Approving lets it:',
  deviceCodeCheck: 'Approve only if your device shows this code:',
  deviceSelfRegisteredNotice:
    '{client} registered itself: the operator of this service has not reviewed it. Approve only if you started this sign-in yourself.',
  deviceMetadataDocumentNotice:
    '{client} registered itself with a metadata document at {document}: the operator of this service has not reviewed it. Approve only if you started this sign-in yourself.',
  approveButton: 'Approve',
  deviceApprovedTitle: 'Device connected',
  deviceApprovedMessage: 'You may continue on your device. You can close this window.',
  deviceDeniedTitle: 'Access denied',
  deviceDeniedMessage: 'The device was not given access. You can close this window.',
  cibaTitle: 'Approve this request?',
  cibaIntro: '{client} asks for your approval. Approving lets it:',
  cibaBindingCheck: 'Approve only if the application shows this message:',
  cibaWrongUser:
    'This request is for another account. Sign out, then open the link again as the person it was sent to.',
  cibaSelfRegisteredNotice:
    '{client} registered itself: the operator of this service has not reviewed it. Approve only if you expect this request from it.',
  cibaMetadataDocumentNotice:
    '{client} registered itself with a metadata document at {document}: the operator of this service has not reviewed it. Approve only if you expect this request from it.',
  cibaApprovedTitle: 'Request approved',
  cibaApprovedMessage: 'The application may continue. You can close this window.',
  cibaDeniedTitle: 'Request denied',
  cibaDeniedMessage: 'The application was not given access. You can close this window.',
  ...GRANTS_TEXTS,
} as const

export type PageTexts = { -readonly [K in keyof typeof DEFAULT_TEXTS]: string }

/** The `theme` option of `createTokenService`: how the built-in pages look. */
export const ThemeSchema = v.strictObject({
  /** Shown above every page and in the title. Default `Gatehouse`. */
  productName: v.optional(v.pipe(v.string(), v.maxLength(200)), 'Gatehouse'),
  /** Logo above the product name: an https URL (http only for loopback hosts) or a `data:image/…` URL. */
  logoUrl: v.optional(
    v.pipe(
      v.string(),
      v.url(),
      v.maxLength(65_536),
      v.check(isLogoUrl, 'must be an https URL, an http URL of a loopback host, or a data:image/ URL'),
    ),
  ),
  /** Buttons, focus rings and accents. Default `#2f5bd3`. */
  primaryColor: v.optional(color, '#2f5bd3'),
  /** Text on primary buttons. Default: black or white, whichever contrasts more with a hex primary colour. */
  primaryTextColor: v.optional(color),
  /** Page background behind the card. Default a light grey (dark grey in dark mode). */
  backgroundColor: v.optional(color),
  /** `auto` follows the browser's preference; `light` or `dark` forces one. Default `auto`. */
  colorScheme: v.optional(v.picklist(['auto', 'light', 'dark'])),
  /** `lang` of the pages (BCP 47), for texts in another language. Default `en`. */
  lang: v.optional(v.pipe(v.string(), v.regex(/^[a-zA-Z]{2,8}(?:-[a-zA-Z0-9]{1,8}){0,6}$/, 'must be a language tag'))),
  /** Text direction. Default `ltr`. */
  dir: v.optional(v.picklist(['ltr', 'rtl', 'auto'])),
  /** Overrides of the visible texts (see `DEFAULT_TEXTS`). */
  texts: v.optional(
    v.strictObject(
      Object.fromEntries(Object.keys(DEFAULT_TEXTS).map((key) => [key, v.optional(text)])) as {
        [K in keyof PageTexts]: v.OptionalSchema<typeof text, undefined>
      },
    ),
  ),
})

/** A theme as given (the validated option, or any part of it). */
export type { Theme }
// The public Theme (src/config/options.ts) is written out; it must be what ThemeSchema accepts.
const _themeMatches: [Theme] extends [v.InferInput<typeof ThemeSchema>]
  ? [v.InferInput<typeof ThemeSchema>] extends [Theme]
    ? true
    : false
  : false = true
void _themeMatches

function isLogoUrl(value: string): boolean {
  if (/^data:image\/[a-z0-9.+-]+[;,]/i.test(value)) return true
  try {
    const url = new URL(value)
    if (url.protocol === 'https:') return true
    return (
      url.protocol === 'http:' &&
      (url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(url.hostname))
    )
  } catch {
    return false
  }
}

/** WCAG 2 relative luminance of a hex colour (alpha ignored), or undefined for other syntaxes. */
function luminance(hex: string): number | undefined {
  if (!HEX_COLOR.test(hex)) return undefined
  let digits = hex.slice(1)
  if (digits.length <= 4) digits = [...digits].map((d) => d + d).join('')
  const [r, g, b] = [0, 2, 4].map((i) => {
    const c = Number.parseInt(digits.slice(i, i + 2), 16) / 255
    return c <= 0.039_28 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }) as [number, number, number]
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}

function contrast(a: number, b: number): number {
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)
}

/** The colours the style sheet uses, derived once per theme. */
function palette(theme: Theme): { primary: string; onPrimary: string; ring: string } {
  const primary = theme.primaryColor ?? '#2f5bd3'
  const l = luminance(primary)
  const onPrimary = theme.primaryTextColor ?? (l === undefined || contrast(l, 1) >= contrast(l, 0) ? '#fff' : '#111')
  // A focus ring needs 3:1 against the white card (WCAG 2.2 §1.4.11): a pale primary falls back to ink.
  const ring = l !== undefined && contrast(l, 1) < 3 ? 'var(--text)' : 'var(--primary)'
  return { primary, onPrimary, ring }
}

const DARK =
  '--ring:color-mix(in srgb,var(--primary) 50%,#fff);--text:#eef0f5;--muted:#b8bfcc;--border:#767e91;--bg:#14161b;--card:#1d2027;--field:#14161b;--error-bg:#3a1d1b;--error-border:#7a3530;--error:#ffb4ab'

const styleCache = new WeakMap<object, string>()

function style(theme: Theme): string {
  const cached = styleCache.get(theme)
  if (cached !== undefined) return cached
  const { primary, onPrimary, ring } = palette(theme)
  const scheme = theme.colorScheme ?? 'auto'
  const dark =
    scheme === 'dark' ? `:root{${DARK}}` : scheme === 'auto' ? `@media (prefers-color-scheme:dark){:root{${DARK}}}` : ''
  const background = theme.backgroundColor ? `:root{--bg:${theme.backgroundColor}}` : ''
  const css = `:root{--primary:${primary};--on-primary:${onPrimary};--ring:${ring};--text:#1a1d24;--muted:#4a5160;--border:#8a92a3;--bg:#f3f5f9;--card:#fff;--field:#fff;--error:#a1221b;--error-bg:#fdecea;--error-border:#e8a19b;color-scheme:${scheme === 'auto' ? 'light dark' : scheme}}
${dark}${background}
*{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:100%;line-height:1.5;color:var(--text);background:var(--bg);-webkit-text-size-adjust:100%}
body{margin:0;min-height:100vh;min-height:100dvh;display:flex;flex-direction:column;align-items:center;justify-content:center;padding:1.5rem 1rem}
main{width:100%;max-width:25rem;background:var(--card);border:1px solid color-mix(in srgb,var(--border) 45%,transparent);border-radius:16px;padding:2.25rem 2rem 2rem;box-shadow:0 1px 2px rgba(16,24,40,.06),0 12px 32px rgba(16,24,40,.10)}
header{display:flex;flex-direction:column;align-items:center;gap:.5rem;margin-bottom:1.5rem}
header img{display:block;max-height:48px;max-width:12rem;height:auto}
.mark{display:flex;align-items:center;justify-content:center;width:2.75rem;height:2.75rem;border-radius:12px;background:var(--primary);color:var(--on-primary);font-weight:700;font-size:1.35rem;line-height:1}
.product{margin:0;font-weight:600;font-size:.95rem;letter-spacing:.01em;color:var(--muted)}
h1{font-size:1.5rem;line-height:1.25;font-weight:700;margin:0 0 .35rem;text-align:center}
.lead{text-align:center;margin:0 0 1.5rem}
p{margin:0 0 1rem;color:var(--muted)}
strong{color:var(--text);font-weight:600;overflow-wrap:anywhere}
.field{margin:0 0 1.1rem}
label{display:block;font-weight:600;font-size:.95rem;margin:0 0 .4rem;color:var(--text)}
input[type=text],input[type=password]{display:block;width:100%;min-height:2.875rem;padding:.65rem .8rem;font:inherit;font-size:1rem;color:var(--text);background:var(--field);border:1px solid var(--border);border-radius:10px}
input[type=text]:hover,input[type=password]:hover{border-color:var(--muted)}
input[aria-invalid=true]{border-color:var(--error)}
input:focus{outline:3px solid var(--ring);outline-offset:2px;border-color:var(--ring)}
:focus-visible{outline:3px solid var(--ring);outline-offset:2px}
:focus:not(:focus-visible){outline:none}
input:focus:not(:focus-visible){outline:3px solid var(--ring)}
.actions{display:flex;flex-direction:column;gap:.65rem;margin-top:1.75rem}
button{font:inherit;font-weight:600;min-height:2.875rem;padding:.7rem 1rem;border-radius:10px;cursor:pointer;width:100%}
button.primary{background:var(--primary);color:var(--on-primary);border:1px solid var(--primary)}
button.primary:hover{filter:brightness(.93)}
button.secondary{background:transparent;color:var(--text);border:1px solid var(--border)}
button.secondary:hover{background:color-mix(in srgb,var(--text) 6%,transparent)}
.error{display:flex;gap:.6rem;align-items:flex-start;color:var(--error);background:var(--error-bg);border:1px solid var(--error-border);border-radius:10px;padding:.75rem .85rem;font-weight:500;margin:0 0 1.25rem;text-align:start}
.error svg{flex:none;width:1.25rem;height:1.25rem;margin-top:.1rem}
.notice{display:flex;gap:.6rem;align-items:flex-start;border:1px solid var(--error-border);border-radius:10px;padding:.75rem .85rem;margin:0 0 1.25rem;text-align:start}
.notice svg{flex:none;width:1.25rem;height:1.25rem;margin-top:.1rem;color:var(--error)}
.code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{font-size:.8rem;white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 1rem}
main.wide{max-width:60rem}
h2{font-size:1.15rem;line-height:1.3;margin:1.75rem 0 .75rem}
pre.json{white-space:pre;overflow-wrap:normal;overflow:auto;max-height:32rem;font-size:.85rem;line-height:1.45;color:var(--text);background:color-mix(in srgb,var(--text) 4%,var(--card));border:1px solid color-mix(in srgb,var(--border) 45%,transparent);border-radius:10px;padding:.75rem .9rem;text-align:start;tab-size:2}
ul.scopes{list-style:none;padding:0;margin:0 0 .5rem;border:1px solid color-mix(in srgb,var(--border) 50%,transparent);border-radius:10px}
ul.scopes li{display:flex;gap:.6rem;align-items:flex-start;padding:.7rem .85rem;color:var(--text)}
ul.scopes li+li{border-top:1px solid color-mix(in srgb,var(--border) 50%,transparent)}
ul.scopes svg{flex:none;width:1.1rem;height:1.1rem;margin-top:.2rem;color:var(--primary)}
ul.scopes code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em;color:var(--muted)}
li.detail dl{margin:.35rem 0 0;display:grid;grid-template-columns:auto 1fr;gap:.2rem .75rem;font-size:.9rem}li.detail dt{color:var(--muted)}li.detail dd{margin:0;overflow-wrap:anywhere}
li.detail dd ul{margin:0;padding-inline-start:1rem}li.detail .empty{color:var(--muted)}
.center{text-align:center}${GRANTS_CSS}
@media (max-width:30rem){body{justify-content:flex-start;padding:0}main{max-width:none;min-height:100vh;min-height:100dvh;border:0;border-radius:0;box-shadow:none;padding:2.5rem 1.25rem 2rem}}
@media (forced-colors:active){button.primary{border:2px solid ButtonText}:focus-visible{outline:3px solid Highlight}}
@media (prefers-reduced-motion:reduce){*{transition:none!important;animation:none!important}}`
  styleCache.set(theme, css)
  return css
}

/** The headers every built-in page carries; `imgSrc` adds a loopback http logo's origin. */
export function pageHeaders(nonce: string, imgSrc = ''): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src https: data:${imgSrc}; base-uri 'none'; frame-ancestors 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  }
}

/** The texts of a theme, defaults filled in. */
export function textsOf(theme: Theme): PageTexts {
  return { ...DEFAULT_TEXTS, ...theme.texts }
}

/**
 * A value a client supplied, escaped, in bold and bidi-isolated: `<bdi>` keeps its direction
 * controls (U+202E, U+2067, …) from reordering the text after it (HTML §4.5.24).
 */
export function isolated(value: string): string {
  return `<strong><bdi>${e(value)}</bdi></strong>`
}

/** Escapes `template` and puts the isolated client name where it says `{client}`. */
export function withClient(template: string, clientName: string): string {
  return e(template).replaceAll('{client}', () => isolated(clientName))
}

export const ALERT_ICON =
  '<svg aria-hidden="true" viewBox="0 0 20 20" fill="currentColor" focusable="false"><path d="M10 1.5a8.5 8.5 0 1 0 0 17 8.5 8.5 0 0 0 0-17Zm-.9 4.2h1.8l-.2 5.6H9.3l-.2-5.6Zm.9 8.8a1.1 1.1 0 1 1 0-2.2 1.1 1.1 0 0 1 0 2.2Z"/></svg>'
export const CHECK_ICON =
  '<svg aria-hidden="true" viewBox="0 0 20 20" fill="currentColor" focusable="false"><path d="M7.6 14.6 3.3 10.3l1.4-1.4 2.9 2.9 7.7-7.7 1.4 1.4z"/></svg>'

/**
 * Renders a page. `body` must already be escaped HTML. `wide` gives the card room for tables and
 * code (the demo client's result) instead of the narrow form width.
 */
export function page(
  theme: Theme,
  title: string,
  body: string,
  init?: { status?: number; headers?: Headers; wide?: boolean },
): Response {
  const nonce = randomToken(16)
  const product = theme.productName ?? 'Gatehouse'
  // A page titled with the product name itself (the landing page) says it once, in the title and
  // on the page: "Gatehouse", not "Gatehouse · Gatehouse".
  const own = title === product
  // The product name is shown next to the logo, so the image itself is decorative (alt="").
  // Without a logo, a monogram of the product name in the primary colour.
  const logo = theme.logoUrl
    ? `<img src="${e(theme.logoUrl)}" alt="" height="48">`
    : `<span class="mark" aria-hidden="true">${e(([...product.trim()][0] ?? 'G').toUpperCase())}</span>`
  const imgSrc = theme.logoUrl?.startsWith('http:') ? ` ${new URL(theme.logoUrl).origin}` : ''
  const html = `<!doctype html>
<html lang="${e(theme.lang ?? 'en')}" dir="${e(theme.dir ?? 'ltr')}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><title>${own ? e(product) : `${e(title)} · ${e(product)}`}</title>
<style nonce="${nonce}">${style(theme)}</style></head>
<body><main${init?.wide ? ' class="wide"' : ''}><header>${logo}${own ? '' : `<p class="product">${e(product)}</p>`}</header>
<h1>${e(title)}</h1>
${body}
</main></body></html>`
  const headers = new Headers(init?.headers)
  for (const [name, value] of Object.entries(pageHeaders(nonce, imgSrc))) headers.set(name, value)
  return new Response(html, { status: init?.status ?? 200, headers })
}

/** Hidden form inputs, escaped. */
export function hidden(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`)
    .join('')
}

export interface LoginPageInput {
  action: string
  uid: string
  csrf: string
  clientName: string
  username?: string
  message?: string
}

/** The sign-in form: POST with `username`, `password` and hidden `uid`, `csrf`. */
export function loginPage(
  theme: Theme,
  input: LoginPageInput,
  init?: { status?: number; headers?: Headers },
): Response {
  const t = textsOf(theme)
  const error = input.message
    ? `<p class="error" role="alert" id="login-error">${ALERT_ICON}<span>${e(input.message)}</span></p>`
    : ''
  const invalid = input.message ? ' aria-invalid="true" aria-describedby="login-error"' : ''
  // With a known username (login_hint or a failed attempt), the cursor goes to the password.
  const known = (input.username ?? '') !== ''
  return page(
    theme,
    t.signInTitle,
    `<p class="lead">${withClient(t.signInSubtitle, input.clientName)}</p>${error}
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, action: 'login' })}
<div class="field"><label for="username">${e(t.usernameLabel)}</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" autocorrect="off" spellcheck="false" required${known ? '' : ' autofocus'}${invalid} value="${e(input.username ?? '')}"></div>
<div class="field"><label for="password">${e(t.passwordLabel)}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${known ? ' autofocus' : ''}${invalid}></div>
<div class="actions"><button class="primary" type="submit" name="decision" value="login">${e(t.signInButton)}</button>
<button class="secondary" type="submit" name="decision" value="cancel" formnovalidate>${e(t.cancelButton)}</button></div>
</form>`,
    init,
  )
}

/** The page shown after signing out when no client is redirected to. */
export function signedOutPage(theme: Theme, init?: { headers?: Headers }): Response {
  const t = textsOf(theme)
  return page(theme, t.signedOutTitle, `<p class="center" role="status">${e(t.signedOutMessage)}</p>`, init)
}

/** An error page for requests that cannot safely be redirected (RFC 6749 §4.1.2.1). */
export function errorPage(theme: Theme, error: string, description: string, status = 400): Response {
  const t = textsOf(theme)
  return page(
    theme,
    t.errorTitle,
    `<p class="error" role="alert">${ALERT_ICON}<span><span class="code">${e(error)}</span>: ${e(description)}</span></p>
<p class="center">${e(t.errorHint)}</p>`,
    { status },
  )
}

/**
 * The page for a path nothing is served at, for a browser (`Accept: text/html`); API clients get
 * JSON (see handler.ts).
 */
export function notFoundPage(theme: Theme): Response {
  const t = textsOf(theme)
  return page(theme, t.notFoundTitle, `<p class="center">${e(t.notFoundMessage)}</p>`, { status: 404 })
}
