/**
 * #18: Auth.js (`@auth/core`) with a plain OIDC provider entry, nothing Gatehouse-specific, signs
 * alice in against Gatehouse served over HTTP on 127.0.0.1 (the node adapter, default settings):
 * Auth.js's CSRF token, POST /auth/signin/gatehouse, Gatehouse's authorize and built-in sign-in
 * page, Auth.js's callback (discovery, code exchange with PKCE and state, ID token checks), and
 * the session. Auth.js takes the user from the ID token, so before #18 (the profile and email
 * claims only at userinfo) the session's user was empty.
 * CONFORMANCE: CODE-01, CODE-12, IDT-01..08; OpenID Connect Core §5.4.
 */
import type { AddressInfo } from 'node:net'
import { Auth, type AuthConfig } from '@auth/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveNode } from '../../adapters/node.ts'
import { type TokenService, createTokenService } from '../../src/index.ts'
import { Browser } from '../helpers/browser.ts'
import { USERS } from '../helpers/service.ts'

/** The Auth.js app: in process (its own fetches to Gatehouse go over HTTP). */
const APP = 'https://app.example.test'
/** Where Auth.js sends the browser once signed in; the test's browser stops there. */
const DONE = `${APP}/done`

/** A Gatehouse served over HTTP with the Auth.js app's client registered, and that app's config. */
async function start(options: { idTokenClaims?: 'scopes' | 'minimal'; idToken?: false }) {
  let service: TokenService | undefined
  const server = await serveNode((request, info) => (service as TokenService).fetch(request, info), {
    port: 0,
    hostname: '127.0.0.1',
  })
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  service = createTokenService({
    issuer,
    users: [{ ...(USERS[0] as (typeof USERS)[0]), name: 'Alice Example' }],
    secretHashIterations: 1000,
    logger: { warn() {}, error: (message, detail) => console.error(message, detail) },
    ...(options.idTokenClaims ? { idTokenClaims: options.idTokenClaims } : {}),
  })
  await service.clients.ensure({
    clientId: 'authjs-app',
    clientSecret: 'authjs-app-secret',
    permissions: [
      'ept:authorization',
      'ept:token',
      'ept:logout',
      'gt:authorization_code',
      'gt:refresh_token',
      'rst:code',
      'scp:openid',
      'scp:profile',
      'scp:email',
    ],
    redirectUris: [`${APP}/auth/callback/gatehouse`],
  })
  await service.ready()
  const config: AuthConfig = {
    basePath: '/auth',
    secret: 'an Auth.js secret for the #18 test, 32+ characters long',
    trustHost: true,
    // The provider entry a new user writes: no checks, endpoints or profile mapping of its own.
    providers: [
      {
        id: 'gatehouse',
        name: 'Gatehouse',
        type: 'oidc',
        issuer,
        clientId: 'authjs-app',
        clientSecret: 'authjs-app-secret',
        ...(options.idToken === false ? { idToken: false } : {}),
      },
    ],
    logger: { error: (error) => console.error(error), warn() {}, debug() {} },
  }
  const stop = async () => {
    await new Promise((resolve) => server.close(resolve))
    await service?.close()
  }
  return { issuer, config, stop }
}

const SETUPS = [
  { name: 'defaults: the plain provider entry', gatehouse: {} },
  {
    name: "idTokenClaims: 'minimal' with the provider's idToken: false (Auth.js reads userinfo)",
    gatehouse: { idTokenClaims: 'minimal' as const, idToken: false as const },
  },
]

describe.each(SETUPS)('#18 Auth.js (@auth/core) signs in through Gatehouse: $name', ({ gatehouse }) => {
  let ctx: Awaited<ReturnType<typeof start>>
  beforeAll(async () => {
    ctx = await start(gatehouse)
  })
  afterAll(async () => {
    await ctx?.stop()
  })

  it('#18 CODE-01 CODE-12: the Auth.js session has alice’s name and email', async () => {
    const { issuer, config } = ctx
    // One cookie jar for both sites (names do not collide); app requests go to Auth.js in process.
    const browser = new Browser(
      (request) => (new URL(request.url).origin === APP ? Auth(request, config) : fetch(request)),
      [DONE],
    )
    const csrf = (await (await browser.request(`${APP}/auth/csrf`)).json()) as { csrfToken: string }
    const started = await browser.navigate(`${APP}/auth/signin/gatehouse`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrfToken: csrf.csrfToken, callbackUrl: DONE }),
    })
    // Auth.js → Gatehouse's authorize → Gatehouse's built-in sign-in page
    const page = started.page
    if (!page) throw new Error(`no sign-in page: ${started.callback}`)
    expect(page.status).toBe(200)
    expect(page.url.startsWith(`${issuer}/connect/`)).toBe(true)
    // sign in → Gatehouse's redirect to Auth.js's callback → Auth.js's redirect to DONE
    const { callback, page: failed } = await browser.signIn(page, 'alice', 'alice-password')
    if (!callback) throw new Error(`sign-in did not come back to the app:\n${failed?.url}\n${failed?.html}`)
    expect(callback.href).toBe(DONE)

    const session = (await (await browser.request(`${APP}/auth/session`)).json()) as {
      user?: { name?: string; email?: string }
    }
    expect(session.user).toMatchObject({ name: 'Alice Example', email: 'alice@example.com' })
  })
})
