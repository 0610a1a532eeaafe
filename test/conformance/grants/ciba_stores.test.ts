/**
 * #41 the auth_req_id redemption is atomic across instances on every store: two services on one
 * store, 20 concurrent token requests on an approved auth_req_id, exactly one 200 (the rest
 * invalid_grant), whose tokens the replays revoke.
 */
import { afterEach, describe, it } from 'vitest'
import { CIBA_CLIENTS, cibaClient, pollCiba, startCiba } from '../../helpers/ciba.ts'
import { expectOneWinnerRevoked, setup } from '../../helpers/flow.ts'
import { clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import type { CibaNotification } from '../../../src/index.ts'

const ROUNDS = 5
const PARALLEL = 20

describe.each(STORES)('#41 CIBA redemption on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  it(`#41 ${PARALLEL}-way race: ${PARALLEL} concurrent token requests on an approved auth_req_id across two instances, ${ROUNDS} rounds: exactly one 200, whose tokens the replays revoke`, async () => {
    const time = clock()
    opened = await kind.create(time.now)
    const sent: CibaNotification[] = []
    const options = { store: opened.store, now: time.now, ciba: { notify: (n: CibaNotification) => void sent.push(n) } }
    const a = { ...(await setup(options)), sent }
    const b = { ...(await setup(options)), sent }
    for (const registration of Object.values(CIBA_CLIENTS)) await a.service.clients.ensure(registration)
    const { client, auth } = cibaClient('agent')
    for (let round = 0; round < ROUNDS; round++) {
      const started = await startCiba(round % 2 === 0 ? a : b, { scope: 'openid offline_access' })
      await (round % 2 === 0 ? b : a).service.ciba.decide({
        approval: started.notification.approvalUrl,
        sub: 'user-1',
        approve: true,
      })
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, async (_, i) => {
          const response = await pollCiba(i % 2 === 0 ? a : b, started.auth_req_id)
          return { status: response.status, body: (await response.json()) as Record<string, unknown> }
        }),
      )
      await expectOneWinnerRevoked(results, [a, b], client, auth, round)
    }
  })
})
