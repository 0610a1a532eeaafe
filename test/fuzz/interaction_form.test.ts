/**
 * Fuzz: the built-in sign-in form POST at /connect/interaction against a real interaction.
 * Each run starts a sign-in with hostile login_hint, state and nonce, shows the page, then posts a
 * few random submissions (real or garbage csrf, with or without the binding cookie, random fields).
 * Checks: values come back escaped and intact; without the real csrf and cookie nothing completes
 * (403); a completion redirects once, to the client's redirect URI with the request's state and iss.
 */
import fc from 'fast-check'
import { STORE_CHOICES } from '../helpers/stores.ts'
import { describe, expect, it } from 'vitest'
import { RU } from '../helpers/service.ts'
import { MARKER, settings, text } from './arbitraries.ts'
import { INTERACTION_URL, ISSUER, checkBrowser, fuzzSetup, redirectUrisOf, startInteraction } from './fixtures.ts'
import { unescapeHtml } from '../helpers/browser.ts'

/** A value as it reaches the service through a urlencoded form or query (USVString). */
function asSent(value: string): string {
  return new URLSearchParams([['v', value]]).get('v') as string
}

const hostile = fc
  .oneof(
    fc.constant(MARKER),
    text.map((t) => `${t}${MARKER}`),
    text,
  )
  .filter((t) => t.trim() !== '')

/** What an authorization request may carry: U+0000 is refused there (#17.5, fuzzed elsewhere). */
const hostileParameter = hostile.filter((t) => !t.includes('\u0000'))

const submission = fc.record({
  csrf: fc.oneof(
    { weight: 4, arbitrary: fc.constant('real' as const) },
    { weight: 2, arbitrary: text },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ),
  cookie: fc.constantFrom('real', 'real', 'real', 'real', 'none', 'garbage', 'other-browser'),
  uid: fc.constantFrom('real', 'real', 'real', 'other'),
  username: fc.oneof(
    { weight: 2, arbitrary: fc.constant('alice') },
    { weight: 2, arbitrary: hostile },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ),
  password: fc.oneof(
    { weight: 2, arbitrary: fc.constant('alice-password') },
    { weight: 2, arbitrary: hostile },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ),
  decision: fc.oneof(fc.constantFrom('login', 'cancel', 'deny', 'allow'), text, fc.constant(undefined)),
  action: fc.constantFrom('login', 'consent', undefined),
})

const run = fc.record({
  client: fc.constantFrom(
    { clientId: 'web', redirectUri: RU, scope: 'openid profile' },
    { clientId: 'consent', redirectUri: 'https://consent.example.test/cb', scope: 'openid email' },
  ),
  loginHint: fc.option(hostileParameter, { freq: 4 }),
  state: fc.option(hostileParameter, { freq: 4 }),
  nonce: hostileParameter,
  steps: fc.array(submission, { minLength: 1, maxLength: 4 }),
})

describe.each(STORE_CHOICES)('fuzz ($name store): the sign-in form', (kind) => {
  it.skipIf(kind.skip)('real uid with random fields, csrf and cookies', async () => {
    const fx = await fuzzSetup(kind)
    const other = await startInteraction(fx.service)
    let completions = 0
    await fc.assert(
      fc.asyncProperty(run, async (r) => {
        const extra: Record<string, string> = { nonce: r.nonce }
        if (r.loginHint !== null) extra.login_hint = r.loginHint
        if (r.state !== null) extra.state = r.state
        const real = await startInteraction(fx.service, extra, r.client)
        // the page shows login_hint escaped and intact
        expect(real.html).not.toMatch(/<x-fuzz|x-fuzz-["']/)
        const username = /name="username"[^>]* value="([^"]*)"/.exec(real.html)?.[1]
        expect(unescapeHtml(username ?? '')).toBe(r.loginHint === null ? '' : asSent(r.loginHint))
        const state = real.url.searchParams.get('state')

        let done = false
        for (const step of r.steps) {
          const form = new URLSearchParams()
          form.set('uid', step.uid === 'real' ? real.uid : other.uid)
          if (step.csrf !== undefined) form.set('csrf', step.csrf === 'real' ? real.csrf : step.csrf)
          if (step.username !== undefined) form.set('username', step.username)
          if (step.password !== undefined) form.set('password', step.password)
          if (step.decision !== undefined) form.set('decision', step.decision)
          if (step.action !== undefined) form.set('action', step.action)
          const cookie = {
            real: real.cookie,
            none: undefined,
            garbage: `${real.cookie}x`,
            'other-browser': other.cookie,
          }[step.cookie]
          const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
          if (cookie !== undefined) headers.cookie = cookie
          const response = await fx.service.fetch(new Request(INTERACTION_URL, { method: 'POST', headers, body: form }))
          const body = await response.text()
          checkBrowser(response, body, { redirectUris: redirectUrisOf(r.client.clientId) })

          const verified = step.uid === 'real' && step.csrf === 'real' && step.cookie === 'real'
          if ([...form.values()].some((value) => value.includes('\u0000'))) {
            // #17.5: refused as a whole before anything is looked up; the interaction is untouched
            expect(response.status, body).toBe(400)
            continue
          }
          if (done) {
            // completed once: the uid is gone
            expect(response.status).toBe(step.uid === 'real' ? 400 : 403)
            continue
          }
          if (!verified) {
            // garbage csrf, another browser's cookie or another interaction's uid: refused, kept
            expect(response.status, body).toBe(403)
            continue
          }
          if (response.status === 303) {
            done = true
            completions++
            const location = new URL(response.headers.get('location') as string)
            expect(location.origin + location.pathname).toBe(r.client.redirectUri)
            expect(location.searchParams.get('state')).toBe(state)
            expect(location.searchParams.get('iss')).toBe(ISSUER)
            const error = location.searchParams.get('error')
            if (error !== null) expect(error).toBe('access_denied')
            else expect(location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
          } else {
            // shown again (wrong password, consent) with the submitted username escaped and intact
            expect(response.status, body).toBe(200)
            const shown = /name="username"[^>]* value="([^"]*)"/.exec(body)?.[1]
            if (shown !== undefined && step.username !== undefined && step.action !== 'consent') {
              expect(unescapeHtml(shown)).toBe(asSent(step.username))
            }
          }
        }
      }),
      settings(0x6a7e_0500, 250),
    )
    expect(completions).toBeGreaterThan(10)
  })
})
