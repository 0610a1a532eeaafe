/**
 * @module pages
 * The built-in HTML pages: sign-in, consent, logout confirmation, signed-out and error. Every value
 * is escaped; responses carry a strict CSP (nonce-bound inline style, no script, no framing).
 */
import type { Config } from './config.ts'
import { escapeHtml as e } from './http.ts'
import { randomToken } from './tokens/opaque.ts'

type Theme = Config['theme']

function style(theme: Theme): string {
  const primary = theme.primaryColor ?? '#2f5bd3'
  return `:root{--primary:${primary};--text:#1a1d24;--muted:#4a5160;--border:#c9ceda;--bg:#f3f5f9;--error:#b3261e}
*{box-sizing:border-box}html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--text);background:var(--bg)}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:1rem}
main{width:100%;max-width:24rem;background:#fff;border:1px solid var(--border);border-radius:12px;padding:2rem 1.75rem;box-shadow:0 4px 18px rgba(20,30,60,.08)}
header{text-align:center;margin-bottom:1.25rem}header img{max-height:48px;max-width:100%}
.product{font-weight:600;color:var(--muted);font-size:.95rem;margin:.25rem 0 0}
h1{font-size:1.35rem;margin:.5rem 0 1rem;text-align:center}
p{line-height:1.5;color:var(--muted)}
label{display:block;font-weight:600;margin:1rem 0 .35rem}
input[type=text],input[type=password]{width:100%;padding:.7rem .75rem;font-size:1rem;border:1px solid var(--border);border-radius:8px;color:var(--text)}
input:focus,button:focus{outline:3px solid color-mix(in srgb,var(--primary) 45%,transparent);outline-offset:1px;border-color:var(--primary)}
.actions{display:flex;flex-direction:column;gap:.6rem;margin-top:1.5rem}
button{font:inherit;font-weight:600;padding:.75rem 1rem;border-radius:8px;border:1px solid var(--primary);cursor:pointer}
button.primary{background:var(--primary);color:#fff}button.secondary{background:#fff;color:var(--primary)}
.error{color:var(--error);background:#fdecea;border:1px solid #f5c2bd;border-radius:8px;padding:.6rem .75rem;font-weight:500}
ul.scopes{padding-left:1.2rem;color:var(--text)}ul.scopes li{margin:.25rem 0}
@media (prefers-color-scheme:dark){:root{--text:#eef0f5;--muted:#b8bfcc;--border:#3a4050;--bg:#14161b}main{background:#1d2027}input[type=text],input[type=password]{background:#14161b}button.secondary{background:transparent;color:#fff;border-color:#8fa6ff}}`
}

/** The headers every built-in page carries. */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src https: data:; base-uri 'none'; frame-ancestors 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  }
}

/** Renders a page. `body` must already be escaped HTML. */
export function page(
  theme: Theme,
  title: string,
  body: string,
  init?: { status?: number; headers?: Headers },
): Response {
  const nonce = randomToken(16)
  const logo = theme.logoUrl ? `<img src="${e(theme.logoUrl)}" alt="${e(theme.productName ?? 'Gatehouse')}">` : ''
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${e(title)} · ${e(theme.productName ?? 'Gatehouse')}</title>
<style nonce="${nonce}">${style(theme)}</style></head>
<body><main><header>${logo}<p class="product">${e(theme.productName ?? 'Gatehouse')}</p></header>
<h1>${e(title)}</h1>
${body}
</main></body></html>`
  const headers = new Headers(init?.headers)
  for (const [name, value] of Object.entries(pageHeaders(nonce))) headers.set(name, value)
  return new Response(html, { status: init?.status ?? 200, headers })
}

function hidden(fields: Record<string, string>): string {
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
  const error = input.message ? `<p class="error" role="alert" id="login-error">${e(input.message)}</p>` : ''
  const described = input.message ? ' aria-describedby="login-error"' : ''
  return page(
    theme,
    'Sign in',
    `<p>to continue to <strong>${e(input.clientName)}</strong></p>${error}
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, action: 'login' })}
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus value="${e(input.username ?? '')}"${described}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${described}>
<div class="actions"><button class="primary" type="submit" name="decision" value="login">Sign in</button>
<button class="secondary" type="submit" name="decision" value="cancel" formnovalidate>Cancel</button></div>
</form>`,
    init,
  )
}

export interface ConsentPageInput {
  action: string
  uid: string
  csrf: string
  clientName: string
  scopes: string[]
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are',
  profile: 'See your name and basic profile',
  email: 'See your email address',
  offline_access: 'Stay signed in to the application when you are not using it',
}

/** The consent form: the approving button comes first. */
export function consentPage(theme: Theme, input: ConsentPageInput): Response {
  const items = input.scopes.map((scope) => `<li>${e(SCOPE_TEXT[scope] ?? `Use ${scope}`)}</li>`).join('')
  return page(
    theme,
    'Allow access?',
    `<p><strong>${e(input.clientName)}</strong> asks to:</p><ul class="scopes">${items}</ul>
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, action: 'consent' })}
<div class="actions"><button class="primary" type="submit" name="decision" value="allow" autofocus>Allow</button>
<button class="secondary" type="submit" name="decision" value="deny">Deny</button></div></form>`,
  )
}

/** The logout confirmation: the approving button comes first. */
export function logoutConfirmPage(theme: Theme, input: { action: string; uid: string; csrf: string }): Response {
  return page(
    theme,
    'Sign out?',
    `<p>Do you want to sign out?</p>
<form method="post" action="${e(input.action)}">${hidden({ uid: input.uid, csrf: input.csrf, confirm: 'yes' })}
<div class="actions"><button class="primary" type="submit" name="decision" value="yes" autofocus>Sign out</button>
<button class="secondary" type="submit" name="decision" value="no">Stay signed in</button></div></form>`,
  )
}

/** The page shown after signing out when no client is redirected to. */
export function signedOutPage(theme: Theme, init?: { headers?: Headers }): Response {
  return page(theme, 'Signed out', '<p>You have been signed out.</p>', init)
}

/** An error page for requests that cannot safely be redirected (RFC 6749 §4.1.2.1). */
export function errorPage(theme: Theme, error: string, description: string, status = 400): Response {
  return page(
    theme,
    'Something went wrong',
    `<p class="error" role="alert"><span class="code">${e(error)}</span>: ${e(description)}</p>
<p>Return to the application and try again.</p>`,
    { status },
  )
}
