import { afterEach, describe, it } from 'vitest'
import {
  type Instance,
  authorizationUrl,
  authorize,
  expectOneWinnerRevoked,
  setup,
  webAuth,
  webClient,
} from '../../helpers/flow.ts'
import { RU, clock, form } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const ROUNDS = 10
const PARALLEL = 20

async function redeem(ctx: Instance, code: string, verifier: string) {
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
      await expectOneWinnerRevoked(results, [a, b], webClient, webAuth, round)
    }
  })
})
