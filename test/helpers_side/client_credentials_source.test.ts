/**
 * The client-credentials token source against a real Gatehouse over HTTP: one request for
 * concurrent callers, caching until `refreshSkew` before expiry (a fake clock), failures.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ClientCredentialsSourceOptions,
  TokenRequestError,
  createClientCredentialsSource,
} from '../../src/client_credentials_source.ts'
import { createResourceServer } from '../../src/resource_server/index.ts'
import { clock } from '../helpers/service.ts'
import { type Gatehouse, WRITER, startGatehouse } from './gatehouse.ts'

const TOKEN = '/connect/token'
const DISCOVERY = '/.well-known/openid-configuration'

describe('client credentials token source against a running Gatehouse', () => {
  let gh: Gatehouse
  const make = (options: Partial<ClientCredentialsSourceOptions> = {}) => {
    const time = clock(Math.floor(Date.now() / 1000))
    const source = createClientCredentialsSource({
      issuer: gh.issuer,
      clientId: 'service',
      clientSecret: 'service-secret',
      scope: ['api1'],
      allowInsecureRequests: true,
      now: time.now,
      ...options,
    })
    return { source, time }
  }
  /** Token requests made while running `action`. */
  async function tokenRequests(action: () => Promise<unknown>): Promise<number> {
    const before = gh.count(TOKEN)
    await action()
    return gh.count(TOKEN) - before
  }

  beforeAll(async () => {
    gh = await startGatehouse()
  })
  afterAll(async () => {
    await gh?.close()
  })

  it('CC-01 TOK-03: gets a bearer token that the resource server accepts', async () => {
    const { source, time } = make()
    const response = await source.getTokenResponse()
    expect(response.token_type).toBe('bearer')
    expect(response.expires_in).toBe(3600)
    expect(response.expires_at).toBe(time.now() + 3600)
    expect(response.scope ?? 'api1').toBe('api1')
    expect(response.refresh_token).toBeUndefined()
    const rs = createResourceServer({ issuer: gh.issuer, audience: 'api1', allowInsecureRequests: true })
    const verified = await rs.verify(await source.getToken(), { scopes: ['api1'] })
    expect(verified.ok && verified.claims.client_id).toBe('service')
  })

  it('concurrent getToken() calls share one token request, and discovery happens once', async () => {
    const { source } = make()
    const discoveriesBefore = gh.count(DISCOVERY)
    let tokens: string[] = []
    const requests = await tokenRequests(async () => {
      tokens = await Promise.all(Array.from({ length: 10 }, () => source.getToken()))
    })
    expect(requests).toBe(1)
    expect(new Set(tokens).size).toBe(1)
    expect(await tokenRequests(() => source.getToken())).toBe(0)
    expect(gh.count(DISCOVERY) - discoveriesBefore).toBe(1)
  })

  it('reuses the cached token until refreshSkew seconds before it expires, then fetches a new one', async () => {
    const { source, time } = make({ refreshSkew: 120 })
    const first = await source.getToken()
    time.advance(3600 - 121)
    let second = ''
    expect(
      await tokenRequests(async () => {
        second = await source.getToken()
      }),
    ).toBe(0)
    expect(second).toBe(first)
    time.advance(1) // now 120 s before expiry
    let third = ''
    expect(
      await tokenRequests(async () => {
        third = await Promise.all([source.getToken(), source.getToken()]).then(([a]) => a as string)
      }),
    ).toBe(1)
    expect(third).not.toBe(first)
    expect(await tokenRequests(() => source.getToken())).toBe(0)
  })

  it('the default skew is 60 seconds', async () => {
    const { source, time } = make()
    const first = await source.getToken()
    time.advance(3600 - 61)
    expect(await source.getToken()).toBe(first)
    time.advance(1)
    expect(await source.getToken()).not.toBe(first)
  })

  it('invalidate() drops the cached token, unless another one replaced it', async () => {
    const { source } = make()
    const first = await source.getToken()
    source.invalidate('some-other-token')
    expect(await source.getToken()).toBe(first)
    source.invalidate(first)
    const second = await source.getToken()
    expect(second).not.toBe(first)
    source.invalidate()
    expect(await source.getToken()).not.toBe(second)
  })

  it('a failed request rejects every waiting caller, is not cached, and a later call retries', async () => {
    const { source } = make()
    gh.failNext(TOKEN, () =>
      Response.json(
        { error: 'temporarily_unavailable', error_description: 'try later' },
        { status: 503, headers: { 'retry-after': '1' } },
      ),
    )
    let results: PromiseSettledResult<string>[] = []
    expect(
      await tokenRequests(async () => {
        results = await Promise.allSettled([source.getToken(), source.getToken(), source.getToken()])
      }),
    ).toBe(1)
    for (const result of results) {
      expect(result.status).toBe('rejected')
      const reason = (result as PromiseRejectedResult).reason as TokenRequestError
      expect(reason).toBeInstanceOf(TokenRequestError)
      expect(reason.stage).toBe('token')
      expect(reason.error).toBe('temporarily_unavailable')
      expect(reason.error_description).toBe('try later')
      expect(reason.status).toBe(503)
    }
    expect(new Set(results.map((r) => (r as PromiseRejectedResult).reason)).size).toBe(1)
    let token = ''
    expect(
      await tokenRequests(async () => {
        token = await source.getToken()
      }),
    ).toBe(1)
    expect(token).toMatch(/^ey/)
  })

  it('a failed discovery is retried by the next call', async () => {
    const { source } = make()
    gh.failNext(DISCOVERY, () => new Response('down', { status: 502 }))
    const error = (await source.getToken().catch((err: unknown) => err)) as TokenRequestError
    expect(error).toBeInstanceOf(TokenRequestError)
    expect(error.stage).toBe('discovery')
    expect(error.status).toBe(502)
    expect(await source.getToken()).toMatch(/^ey/)
  })

  it('CC-02: wrong credentials reject with invalid_client, with basic and with post', async () => {
    for (const clientAuth of ['basic', 'post'] as const) {
      const { source } = make({ clientSecret: 'wrong', clientAuth })
      const error = (await source.getToken().catch((err: unknown) => err)) as TokenRequestError
      expect(error).toBeInstanceOf(TokenRequestError)
      expect(error.error).toBe('invalid_client')
      expect(error.status).toBe(401)
      expect(error.message).not.toContain('wrong')
    }
  })

  it('client_secret_post works, and scopes are asked for as given', async () => {
    const { source } = make({
      clientId: WRITER.clientId,
      clientSecret: WRITER.clientSecret,
      clientAuth: 'post',
      scope: 'api1 api1.write',
    })
    const response = await source.getTokenResponse()
    const rs = createResourceServer({ issuer: gh.issuer, audience: 'api1', allowInsecureRequests: true })
    const verified = await rs.verify(response.access_token, { scopes: ['api1.write'] })
    expect(verified.ok && verified.claims.sub).toBe('writer')
  })

  it('CC-03: a scope the client may not have rejects with invalid_scope', async () => {
    const { source } = make({ scope: 'api2' })
    const error = (await source.getToken().catch((err: unknown) => err)) as TokenRequestError
    expect(error.error).toBe('invalid_scope')
    expect(error.status).toBe(400)
  })

  it('an http: issuer is refused unless allowInsecureRequests is set', async () => {
    const { source } = make({ allowInsecureRequests: false })
    const before = gh.count(DISCOVERY)
    const error = (await source.getToken().catch((err: unknown) => err)) as TokenRequestError
    expect(error).toBeInstanceOf(TokenRequestError)
    expect(error.stage).toBe('discovery')
    expect(gh.count(DISCOVERY)).toBe(before)
  })
})
