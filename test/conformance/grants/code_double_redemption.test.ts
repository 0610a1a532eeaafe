/**
 * #27 item 12: what a concurrent double redemption of one authorization code does (a React
 * StrictMode double effect sends exactly this). Two service instances share one store; N parallel
 * redemptions of one code, split between them, repeated for several rounds: exactly one 200 every
 * round (never none, never two), every other one 400 invalid_grant, and the replays revoke what the
 * winner got (RFC 6749 §4.1.2): its refresh token is refused and its access token is inactive at
 * introspection.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { authorizationUrl, authorize, setup, webAuth, webClient } from '../../helpers/flow.ts'
import { RU, clock, form } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const ROUNDS = 10
const PARALLEL = 20

type Ctx = Awaited<ReturnType<typeof setup>>

async function redeem(ctx: Ctx, code: string, verifier: string) {
  const response = await ctx.service.fetch(
    form(ctx.as.token_endpoint as string, {
      grant_type: 'authorization_code',
      redirect_uri: RU,
      code,
      code_verifier: verifier,
      client_id: 'web',
      client_secret: 'web-secret',
    }),
  )
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

describe.each(STORES)('#27 item 12 concurrent double redemption on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  it(`#27 item 12 CODE-02: ${PARALLEL} parallel redemptions across two instances, ${ROUNDS} rounds: exactly one 200 every round, whose tokens the replays revoke`, async () => {
    const time = clock()
    opened = await kind.create(time.now)
    const a = await setup({ store: opened.store, now: time.now })
    const b = await setup({ store: opened.store, now: time.now })
    for (let round = 0; round < ROUNDS; round++) {
      const request = await authorizationUrl(a.as, { scope: 'openid offline_access api1' })
      const callback = await authorize(a.browser, request.url)
      const code = callback.searchParams.get('code') as string
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) => redeem(i % 2 === 0 ? a : b, code, request.verifier)),
      )
      const winners = results.filter((result) => result.status === 200)
      expect(winners, `round ${round}: ${results.map((r) => r.status).join(' ')}`).toHaveLength(1)
      for (const loser of results.filter((result) => result.status !== 200)) {
        expect(loser.status).toBe(400)
        expect(loser.body.error).toBe('invalid_grant')
      }
      const won = winners[0]?.body as { access_token: string; refresh_token: string }
      expect(won.refresh_token).toBeTypeOf('string')
      for (const ctx of [a, b]) {
        const introspected = await oauth.introspectionRequest(ctx.as, webClient, webAuth, won.access_token, ctx.opts)
        expect(await introspected.json()).toEqual({ active: false })
        const refreshed = await oauth.refreshTokenGrantRequest(ctx.as, webClient, webAuth, won.refresh_token, ctx.opts)
        expect(refreshed.status).toBe(400)
        expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' })
      }
    }
  })
})
