/**
 * The built-in pages and their theme: strict colour validation (no CSS injection), logo URLs,
 * texts, accessibility markup (lang, labels, role=alert, autocomplete), the strict CSP, and the
 * form markup other code relies on (field names, hidden inputs). #27 item 13: the 404 page for
 * browsers, the expired sign-in page's advice said once, the landing page's title, the wide layout
 * of the demo client's result.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { createTokenService } from '../../../src/index.ts'
import {
  CSS_COLOR,
  DEFAULT_TEXTS,
  type Theme,
  ThemeSchema,
  errorPage,
  loginPage,
  notFoundPage,
  page,
  signedOutPage,
} from '../../../src/pages/layout.ts'
import { landingPage } from '../../../src/ops/landing.ts'
import { consentPage, logoutConfirmPage } from '../../../src/pages/consent.ts'
import { deviceConfirmPage, deviceDonePage, userCodePage } from '../../../src/interaction/device_pages.ts'

const LOGIN = { action: 'https://id.example/connect/interaction', uid: 'u1', csrf: 'c1', clientName: 'Web App' }

const parse = (theme: unknown) => v.safeParse(ThemeSchema, theme)

describe('theme option', () => {
  it('accepts CSS colours: hex, colour functions of numbers, names', () => {
    for (const color of [
      '#abc',
      '#ABCD',
      '#2f5bd3',
      '#2f5bd3cc',
      'rgb(47 91 211)',
      'rgba(0, 0, 0, .5)',
      'hsl(220deg 65% 50% / .9)',
      'oklch(0.62 0.15 250)',
      'rebeccapurple',
      'transparent',
    ]) {
      expect(parse({ primaryColor: color }).success, color).toBe(true)
      expect(CSS_COLOR.test(color), color).toBe(true)
    }
  })

  it('rejects anything that could leave the declaration', () => {
    for (const color of [
      'red;}body{display:none',
      'red; background:url(https://x.example/)',
      'url(https://x.example/a.png)',
      'var(--x)',
      'expression(alert(1))',
      'rgb(1,2,3);',
      'rgb(calc(1 + 2) 0 0)',
      '</style><script>alert(1)</script>',
      'red !important',
      '"red"',
      'red\\;',
      '#12345',
      '#ggg',
      '',
      'rgb(1 2 3) red',
      'red\n}',
    ]) {
      expect(parse({ primaryColor: color }).success, color).toBe(false)
      expect(parse({ backgroundColor: color }).success, color).toBe(false)
      expect(parse({ primaryTextColor: color }).success, color).toBe(false)
    }
  })

  it('logo: https, http on loopback, data:image/ only', () => {
    for (const ok of [
      'https://cdn.example/logo.svg',
      'http://localhost:3000/logo.png',
      'data:image/png;base64,iVBORw0',
    ]) {
      expect(parse({ logoUrl: ok }).success, ok).toBe(true)
    }
    for (const bad of ['javascript:alert(1)', 'http://cdn.example/logo.png', 'data:text/html,<b>x</b>', 'logo.png']) {
      expect(parse({ logoUrl: bad }).success, bad).toBe(false)
    }
  })

  it('texts, lang, dir and colorScheme are validated; unknown keys are refused', () => {
    expect(
      parse({ texts: { signInTitle: 'Anmelden', signInButton: 'Weiter' }, lang: 'de-CH', dir: 'ltr' }).success,
    ).toBe(true)
    expect(parse({ texts: { signInTitel: 'x' } }).success).toBe(false)
    expect(parse({ texts: { signInTitle: '' } }).success).toBe(false)
    expect(parse({ lang: 'en"><script>' }).success).toBe(false)
    expect(parse({ colorScheme: 'sepia' }).success).toBe(false)
    expect(parse({ fontFamily: 'x' }).success).toBe(false)
  })

  it('createTokenService names the bad theme field; existing themes stay valid', () => {
    expect(() => createTokenService({ issuer: 'https://id.example', theme: { primaryColor: 'red;}' } })).toThrow(
      /theme\.primaryColor/,
    )
    expect(() =>
      createTokenService({
        issuer: 'https://id.example',
        theme: { productName: 'Acme', logoUrl: 'https://cdn.example/l.png', primaryColor: '#0b6e4f' },
      }),
    ).not.toThrow()
  })
})

describe('pages', () => {
  it('sign-in: lang, labels tied to inputs, autocomplete, field names, CSP with one nonce', async () => {
    const response = loginPage({}, LOGIN)
    const html = await response.text()
    expect(html).toMatch(/<html lang="en" dir="ltr">/)
    expect(html).toContain('<meta name="viewport" content="width=device-width,initial-scale=1">')
    expect(html).toMatch(/<label for="username">Username<\/label>\s*<input id="username" name="username"/)
    expect(html).toMatch(/<label for="password">Password<\/label>\s*<input id="password" name="password"/)
    expect(html).toMatch(/name="username"[^>]* autocomplete="username"/)
    expect(html).toMatch(/name="password"[^>]* autocomplete="current-password"/)
    expect(html).toContain('name="decision" value="login"')
    expect(html).toContain('name="decision" value="cancel" formnovalidate')
    expect(html).not.toMatch(/<script/i)
    const csp = response.headers.get('content-security-policy') ?? ''
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1]
    expect(csp).toBe(
      `default-src 'none'; style-src 'nonce-${nonce}'; img-src https: data:; base-uri 'none'; frame-ancestors 'none'`,
    )
    expect(html).toContain(`<style nonce="${nonce}">`)
    expect(response.headers.get('x-frame-options')).toBe('DENY')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(html).toContain(':focus-visible{outline:3px solid var(--ring)')
    expect(html).toContain('@media (max-width:30rem)')
  })

  it('sign-in: the form markup test browsers and hosts scrape is unchanged', async () => {
    const html = await loginPage({}, { ...LOGIN, username: 'alice"<x>' }).text()
    const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(html)
    expect(form?.[1]).toBe(LOGIN.action)
    const hidden = [...(form?.[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1],
      m[2],
    ])
    expect(hidden).toEqual([
      ['uid', 'u1'],
      ['csrf', 'c1'],
      ['action', 'login'],
    ])
    expect(/name="username"[^>]* value="([^"]*)"/.exec(html)?.[1]).toBe('alice&quot;&lt;x&gt;')
    // a known username puts the cursor on the password
    expect(html).toMatch(/<input id="password"[^>]* autofocus/)
    expect(html).not.toMatch(/<input id="username"[^>]* autofocus/)
  })

  it('sign-in error: announced with role=alert and tied to the inputs', async () => {
    const html = await loginPage({}, { ...LOGIN, message: 'The username or password is incorrect.' }).text()
    expect(html).toMatch(/<p class="error" role="alert" id="login-error">.*The username or password is incorrect\./)
    expect(html).toMatch(/<input id="username"[^>]* aria-invalid="true" aria-describedby="login-error"/)
    expect(html).toMatch(/<input id="password"[^>]* aria-invalid="true" aria-describedby="login-error"/)
  })

  it('texts: overridable, escaped, {client} becomes the escaped client name', async () => {
    const theme: Theme = {
      lang: 'de',
      texts: {
        signInTitle: 'Anmelden <jetzt>',
        signInSubtitle: 'weiter zu {client}',
        usernameLabel: 'Benutzername',
        signInButton: 'Weiter',
      },
    }
    const html = await loginPage(theme, { ...LOGIN, clientName: 'Evil <img src=x>' }).text()
    expect(html).toContain('<html lang="de" dir="ltr">')
    expect(html).toContain('<h1>Anmelden &lt;jetzt&gt;</h1>')
    expect(html).toContain('<title>Anmelden &lt;jetzt&gt; · Gatehouse</title>')
    expect(html).toContain('weiter zu <strong><bdi>Evil &lt;img src=x&gt;</bdi></strong>')
    expect(html).toContain('<label for="username">Benutzername</label>')
    expect(html).toContain('value="login">Weiter</button>')
    expect(html).toContain(`<label for="password">${DEFAULT_TEXTS.passwordLabel}</label>`)
  })

  it('colours: button text contrasts with the primary colour; host values reach the style sheet verbatim', async () => {
    const dark = await loginPage({ primaryColor: '#2f5bd3' }, LOGIN).text()
    expect(dark).toContain('--primary:#2f5bd3;--on-primary:#fff;--ring:var(--primary)')
    const pale = await loginPage({ primaryColor: '#ffd400' }, LOGIN).text()
    expect(pale).toContain('--primary:#ffd400;--on-primary:#111;--ring:var(--text)')
    const custom = await loginPage(
      { primaryColor: 'oklch(0.6 0.2 250)', primaryTextColor: 'white', backgroundColor: '#0f172a' },
      LOGIN,
    ).text()
    expect(custom).toContain('--primary:oklch(0.6 0.2 250);--on-primary:white;')
    expect(custom).toContain(':root{--bg:#0f172a}')
  })

  it('colour scheme: auto follows the browser, light and dark force one', async () => {
    expect(await loginPage({}, LOGIN).text()).toContain('@media (prefers-color-scheme:dark)')
    const light = await loginPage({ colorScheme: 'light' }, LOGIN).text()
    expect(light).not.toContain('prefers-color-scheme')
    expect(light).toContain('color-scheme:light')
    const dark = await loginPage({ colorScheme: 'dark' }, LOGIN).text()
    expect(dark).toContain('color-scheme:dark')
    expect(dark).toContain(':root{--ring:')
  })

  it('logo: decorative next to the product name; a loopback http logo is allowed by the CSP', async () => {
    const https = await loginPage({ logoUrl: 'https://cdn.example/logo.svg', productName: 'Acme' }, LOGIN).text()
    expect(https).toContain('<img src="https://cdn.example/logo.svg" alt="" height="48">')
    expect(https).toContain('<p class="product">Acme</p>')
    const local = loginPage({ logoUrl: 'http://localhost:3000/logo.png' }, LOGIN)
    expect(local.headers.get('content-security-policy')).toContain('img-src https: data: http://localhost:3000;')
    const none = await loginPage({ productName: 'acme' }, LOGIN).text()
    expect(none).toContain('<span class="mark" aria-hidden="true">A</span>')
  })

  it('#27 item 6: client names and hosts are isolated in <bdi>; a trailing U+202E stays inside the name', async () => {
    const name = 'Evil\u202e'
    const login = await loginPage({}, { ...LOGIN, clientName: name }).text()
    expect(login).toContain('to continue to <strong><bdi>Evil\u202e</bdi></strong></p>')
    const notice = { kind: 'dynamic', redirectHost: 'evil.example' } as const
    const consent = await consentPage(
      {},
      { ...LOGIN, clientName: name, scopes: ['openid'], selfRegistered: notice },
    ).text()
    expect(consent).toContain(
      '<strong><bdi>Evil\u202e</bdi></strong> registered itself: the operator of this service has not reviewed it. Allowing sends you to <strong><bdi>evil.example</bdi></strong>.',
    )
    const redirect = { clientName: name, host: 'evil.example' }
    for (const signedIn of [true, false]) {
      const logout = await logoutConfirmPage({}, { ...LOGIN, redirect, signedIn }).text()
      expect(logout).toMatch(
        /<strong><bdi>Evil\u202e<\/bdi><\/strong> registered itself: [^<]*<strong><bdi>evil\.example<\/bdi><\/strong>\./,
      )
    }
  })

  it('consent, logout, signed-out and error pages keep their texts and forms', async () => {
    const consent = await consentPage({}, { ...LOGIN, scopes: ['openid', 'email', 'api1'] }).text()
    expect(consent).toContain('<h1>Allow access?</h1>')
    expect(consent).toContain('<strong><bdi>Web App</bdi></strong> asks to:')
    expect(consent).toContain('name="decision" value="allow" autofocus>Allow</button>')
    expect(consent).toContain('<span>Use api1</span>')
    const logout = await logoutConfirmPage({}, LOGIN).text()
    expect(logout).toContain('<input type="hidden" name="confirm" value="yes">')
    expect(logout).toContain('value="no">Stay signed in</button>')
    const out = await signedOutPage({ texts: { signedOutMessage: 'Bis bald.' } }).text()
    expect(out).toContain('<h1>Signed out</h1>')
    expect(out).toContain('role="status">Bis bald.</p>')
    const error = errorPage({}, 'invalid_request', 'bad <thing>', 403)
    expect(error.status).toBe(403)
    const html = await error.text()
    expect(html).toContain('Something went wrong')
    expect(html).toMatch(/role="alert">.*<span class="code">invalid_request<\/span>: bad &lt;thing&gt;/)
  })
})

describe('#29 device verification pages (RFC 8628 §3.3)', () => {
  const DEVICE = {
    ...LOGIN,
    action: 'https://id.example/connect/verify',
    scopes: ['openid', 'api1'],
    userCode: 'BCDF-GHJK',
  }

  it('#29 the client name is escaped and isolated in <bdi> on the confirmation, the notice and the sign-in', async () => {
    const name = '<script>alert(1)</script>\u202e'
    const confirm = await deviceConfirmPage(
      {},
      { ...DEVICE, clientName: name, selfRegistered: { kind: 'dynamic' } },
    ).text()
    expect(confirm).not.toContain('<script>')
    expect(confirm).toContain(
      '<p id="device-intro">A device is signing in to <strong><bdi>&lt;script&gt;alert(1)&lt;/script&gt;\u202e</bdi></strong>. Approving lets it:</p>',
    )
    expect(confirm).toContain(
      '<strong><bdi>&lt;script&gt;alert(1)&lt;/script&gt;\u202e</bdi></strong> registered itself: the operator of this service has not reviewed it.',
    )
    const document = { kind: 'metadata_document', documentHost: 'evil.example\u202e' } as const
    const documented = await deviceConfirmPage({}, { ...DEVICE, clientName: 'Tool', selfRegistered: document }).text()
    expect(documented).toContain('a metadata document at <strong><bdi>evil.example\u202e</bdi></strong>:')
    const login = await loginPage({}, { ...LOGIN, clientName: name }).text()
    expect(login).not.toContain('<script>')
  })

  it('#29 the confirmation lists every scope, shows the user code, Approve first then Deny, in the form of its interaction', async () => {
    const html = await deviceConfirmPage({}, DEVICE).text()
    expect(html).toContain('<h1>Allow this device?</h1>')
    expect(html).toContain('<li data-scope="openid">')
    expect(html).toContain('<span>Use api1</span>')
    expect(html).toContain('<strong class="code" id="user-code">BCDF-GHJK</strong>')
    expect(html).toContain(hiddenInputs({ uid: 'u1', csrf: 'c1', action: 'confirm' }))
    expect(html.indexOf('value="approve"')).toBeLessThan(html.indexOf('value="deny"'))
    expect(html).toContain('value="approve" autofocus>Approve</button>')
    expect(html).not.toContain('id="self-registered"')
  })

  it('#29 the user-code form: a labelled user_code input, escaped value, message announced; texts overridable', async () => {
    const plain = await userCodePage({}, { action: DEVICE.action, csrf: 'c1' }).text()
    expect(plain).toContain('<label for="user_code">Code</label>')
    expect(plain).toContain('<input type="hidden" name="csrf" value="c1">')
    expect(plain).not.toContain('role="alert"')
    const theme = { texts: { verifyTitle: 'Gerät verbinden', userCodeLabel: 'Kode <b>' } }
    const html = await userCodePage(theme, {
      action: DEVICE.action,
      csrf: 'c1',
      userCode: '"><x',
      message: 'Falsch <i>',
    }).text()
    expect(html).toContain('<h1>Gerät verbinden</h1>')
    expect(html).toContain('<label for="user_code">Kode &lt;b&gt;</label>')
    expect(html).toContain('value="&quot;&gt;&lt;x"')
    expect(html).toContain('role="alert" id="code-error"')
    expect(html).toContain('<span>Falsch &lt;i&gt;</span>')
    expect(html).toContain('aria-describedby="code-error"')
  })

  it('#29 after the decision: approved says the device may continue, denied says so; both themable', async () => {
    expect(await deviceDonePage({}, true).text()).toContain(
      'role="status">You may continue on your device. You can close this window.</p>',
    )
    const denied = await deviceDonePage({ texts: { deviceDeniedTitle: 'Abgelehnt' } }, false).text()
    expect(denied).toContain('<h1>Abgelehnt</h1>')
    expect(denied).toContain('The device was not given access.')
    expect(Object.keys(DEFAULT_TEXTS)).toContain('approveButton')
    expect(parse({ texts: { deviceIntro: '{client} möchte:' } }).success).toBe(true)
  })
})

function hiddenInputs(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
    .join('')
}

describe("#27 item 13: a newcomer's pages", () => {
  const ISSUER = 'https://id.example'
  const ENDPOINTS = {
    openidConfiguration: `${ISSUER}/.well-known/openid-configuration`,
    oauthMetadata: `${ISSUER}/.well-known/oauth-authorization-server`,
    jwks: `${ISSUER}/.well-known/jwks.json`,
  } as Parameters<typeof landingPage>[1]['endpoints']
  const titleOf = (html: string) => /<title>([^<]*)<\/title>/.exec(html)?.[1]

  it('#27 item 13: an unknown path answers a browser (Accept: text/html) with a 404 page in the theme', async () => {
    const service = createTokenService({ issuer: ISSUER, theme: { productName: 'Acme ID' } })
    const accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' // a browser's navigation
    const response = await service.fetch(new Request(`${ISSUER}/nope`, { headers: { accept } }))
    expect(response.status).toBe(404)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(response.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'nonce-/)
    const html = await response.text()
    expect(titleOf(html)).toBe('Page not found · Acme ID')
    expect(html).toContain('<h1>Page not found</h1>')
    expect(html).toContain('There is nothing at this address.')
    const head = await service.fetch(new Request(`${ISSUER}/nope`, { method: 'HEAD', headers: { accept } }))
    expect(head.status).toBe(404)
    expect(await head.text()).toBe('')
  })

  it('#27 item 13: an unknown path answers API clients with JSON 404 `not_found`, not `invalid_request`', async () => {
    const service = createTokenService({ issuer: ISSUER })
    for (const accept of [undefined, 'application/json', '*/*', 'text/html;q=0, application/json']) {
      const headers: Record<string, string> = accept === undefined ? {} : { accept }
      const response = await service.fetch(new Request(`${ISSUER}/connect/nope`, { method: 'POST', headers }))
      expect(response.status, accept).toBe(404)
      expect(response.headers.get('content-type'), accept).toBe('application/json')
      expect(await response.json(), accept).toEqual({
        error: 'not_found',
        error_description: 'no endpoint at this path',
      })
    }
  })

  it('#27 item 13: the not-found texts are theme texts', async () => {
    const html = await notFoundPage({
      texts: { notFoundTitle: 'Seite nicht gefunden', notFoundMessage: 'Nichts <hier>.' },
    }).text()
    expect(html).toContain('<h1>Seite nicht gefunden</h1>')
    expect(html).toContain('Nichts &lt;hier&gt;.')
    expect(DEFAULT_TEXTS.notFoundTitle).toBe('Page not found')
  })

  it('#27 item 13: an expired or used sign-in gives its advice once', async () => {
    const service = createTokenService({ issuer: ISSUER })
    const response = await service.fetch(new Request(`${ISSUER}/connect/interaction?uid=expired-or-unknown`))
    expect(response.status).toBe(400)
    const html = await response.text()
    expect(html).toContain('the sign-in request has expired or was already used')
    expect(html.match(/return to the application/gi)).toHaveLength(1)
  })

  it('#27 item 13: the landing page is titled with the product name once, not "Gatehouse · Gatehouse"', async () => {
    const html = await landingPage({}, { issuer: ISSUER, endpoints: ENDPOINTS }).text()
    expect(titleOf(html)).toBe('Gatehouse')
    expect(html).toContain('<h1>Gatehouse</h1>')
    expect(html).not.toContain('<p class="product">')
    const themed = await landingPage({ productName: 'Acme ID' }, { issuer: ISSUER, endpoints: ENDPOINTS }).text()
    expect(titleOf(themed)).toBe('Acme ID')
    expect(themed).toContain('<h1>Acme ID</h1>')
    // Other pages keep "title · product" and the product name above the title.
    const login = await loginPage({ productName: 'Acme ID' }, LOGIN).text()
    expect(titleOf(login)).toBe('Sign in · Acme ID')
    expect(login).toContain('<p class="product">Acme ID</p>')
  })

  it('#27 item 13: a wide page gives code blocks room: a wide card, JSON that scrolls instead of wrapping', async () => {
    const wide = await page({}, 'Signed in', '<pre class="json"><code>{}</code></pre>', { wide: true }).text()
    expect(wide).toContain('<main class="wide">')
    expect(wide).toMatch(/main\.wide\{max-width:60rem\}/)
    expect(wide).toMatch(/pre\.json\{white-space:pre;[^}]*overflow:auto/)
    expect(await page({}, 'Sign in', '').text()).toContain('<main><header>')
  })
})
