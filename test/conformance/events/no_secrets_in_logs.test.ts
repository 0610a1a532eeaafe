/**
 * Nothing secret in logs, events or error responses (issue #6): a run through every endpoint with
 * right and wrong secrets, passwords and tokens, replays, a failing store and a failing audit hook,
 * then a grep of everything captured for the values it used.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { StoreUnavailableError, createMemoryStore } from '../../../src/index.ts'
import type { Store } from '../../../src/index.ts'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl, setup, signIn, webAuth, webClient } from '../../helpers/flow.ts'
import { ISSUER, basic, clock, form } from '../../helpers/service.ts'

const captured: string[] = []
const record = (...args: unknown[]) =>
  void captured.push(
    args
      .map((arg) => {
        if (arg instanceof Error) return `${arg.name}: ${arg.message}\n${arg.stack ?? ''}`
        try {
          return JSON.stringify(arg, (_, value) => (value instanceof Error ? `${value.message} ${value.stack}` : value))
        } catch {
          return String(arg)
        }
      })
      .join(' '),
  )

beforeEach(() => {
  captured.length = 0
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    vi.spyOn(console, method).mockImplementation(record)
  }
})
afterEach(() => vi.restoreAllMocks())

/** Keeps every error response's status line, headers and body (success bodies and redirects carry tokens and codes by design). */
function recordingFetch(handler: (request: Request) => Promise<Response>) {
  return async (request: Request): Promise<Response> => {
    const response = await handler(request)
    if (response.status >= 400) {
      const headers = JSON.stringify([...response.headers])
      captured.push(`${response.status} ${headers} ${await response.clone().text()}`)
    }
    return response
  }
}

describe('no secrets in logs, events or error responses', () => {
  it('a hostile session leaves no secret, password or token in anything captured', async () => {
    const time = clock()
    const inner = createMemoryStore({ now: time.now })
    let failRotation = false
    const store: Store = {
      ...inner,
      refreshTokens: {
        ...inner.refreshTokens,
        rotate: (...args) => {
          if (failRotation) return Promise.reject(new StoreUnavailableError('injected outage'))
          return inner.refreshTokens.rotate(...args)
        },
      },
    }
    let throwInHook = false
    const ctx = await setup({
      store,
      now: time.now,
      logger: { warn: record, error: record },
      onEvent: (event) => {
        record(event)
        if (throwInHook) throw new Error('audit sink down')
      },
    })
    const fetch = recordingFetch((request) => ctx.service.fetch(request, { address: '192.0.2.1' }))
    const opts = { [oauth.customFetch]: (url: string, init?: RequestInit) => fetch(new Request(url, init)) }
    const browser = new Browser(fetch)

    const secrets: string[] = ['service-secret', 'web-secret', 'alice-password', 'guessed-secret-1', 'wrong-pass-2']
    // Client authentication, right and wrong, every endpoint.
    for (const secret of ['service-secret', 'guessed-secret-1']) {
      for (const path of ['token', 'introspect', 'revoke']) {
        const params: Record<string, string> = path === 'token' ? { grant_type: 'client_credentials' } : { token: 'x' }
        await fetch(form(`${ISSUER}/connect/${path}`, params, { authorization: basic('service', secret) }))
        await fetch(form(`${ISSUER}/connect/${path}`, { ...params, client_id: 'service', client_secret: secret }))
      }
    }
    // Sign-in: a wrong password, then the code flow proper.
    const { url } = await authorizationUrl(ctx.as)
    const page = (await browser.navigate(url.href)).page
    if (!page) throw new Error('expected the sign-in page')
    await browser.submit(page, { username: 'alice', password: 'wrong-pass-2' })
    const flow = await signIn({ ...ctx, browser, opts })
    const tokens = [flow.result.access_token, flow.result.refresh_token, flow.result.id_token, flow.params.get('code')]
    // Replays and misuse of every token.
    const rt = flow.result.refresh_token as string
    const refreshed = await oauth.processRefreshTokenResponse(
      ctx.as,
      webClient,
      await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, rt, opts),
    )
    tokens.push(refreshed.access_token, refreshed.refresh_token, refreshed.id_token)
    await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, rt, opts) // reuse: family revoked
    await oauth.authorizationCodeGrantRequest(
      ctx.as,
      webClient,
      webAuth,
      flow.params,
      flow.callback.href,
      'x'.repeat(43),
      opts,
    )
    await fetch(
      new Request(`${ISSUER}/connect/userinfo`, { headers: { authorization: `Bearer ${refreshed.access_token}` } }),
    )
    await fetch(new Request(`${ISSUER}/connect/userinfo?access_token=${refreshed.access_token}`))
    await fetch(
      form(
        `${ISSUER}/connect/token`,
        { grant_type: 'refresh_token', refresh_token: rt },
        { authorization: basic('web2', 'web2-secret') },
      ),
    )
    await fetch(new Request(`${ISSUER}/connect/logout?id_token_hint=${flow.result.id_token}x`))
    // A store outage mid-rotation and a failing audit hook: both are logged.
    const second = await signIn({ ...ctx, browser, opts })
    tokens.push(second.result.access_token, second.result.refresh_token)
    failRotation = true
    await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, second.result.refresh_token as string, opts)
    failRotation = false
    throwInHook = true
    await fetch(
      form(
        `${ISSUER}/connect/token`,
        { grant_type: 'client_credentials' },
        { authorization: basic('service', 'service-secret') },
      ),
    )

    const all = captured.join('\n')
    // The run did produce logs, events and error responses to search.
    expect(all).toMatch(/temporarily_unavailable/)
    expect(all).toMatch(/onEvent hook failed/)
    expect(all).toMatch(/signin\.failed/)
    expect(all).toMatch(/invalid_client/)
    for (const value of [...secrets, ...tokens]) {
      expect(typeof value).toBe('string')
      expect(all.includes(value as string), `found ${String(value).slice(0, 12)}… in captured output`).toBe(false)
    }
  })
})
