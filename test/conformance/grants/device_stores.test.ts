import { afterEach, describe, it } from 'vitest'
import {
  DEVICE_SCOPES,
  approveDevice,
  deviceClient,
  ensureDeviceClients,
  pollDevice,
  startDevice,
} from '../../helpers/device.ts'
import { expectOneWinnerRevoked, setup } from '../../helpers/flow.ts'
import { clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const ROUNDS = 5
const PARALLEL = 20

describe.each(STORES)('#29 device code redemption on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  it(`#29 ${PARALLEL}-way race: ${PARALLEL} concurrent token requests on an approved device code across two instances, ${ROUNDS} rounds: exactly one 200, whose tokens the replays revoke`, async () => {
    const time = clock()
    opened = await kind.create(time.now)
    const a = await setup({ store: opened.store, now: time.now, scopes: DEVICE_SCOPES })
    const b = await setup({ store: opened.store, now: time.now, scopes: DEVICE_SCOPES })
    await ensureDeviceClients(a)
    const { client, auth } = deviceClient('tv')
    for (let round = 0; round < ROUNDS; round++) {
      const device = await startDevice(round % 2 === 0 ? a : b, { scope: 'openid offline_access api1' }, 'tv')
      await approveDevice(opened.store, device.user_code, time.now())
      const results = await Promise.all(
        Array.from({ length: PARALLEL }, async (_, i) => {
          const response = await pollDevice(i % 2 === 0 ? a : b, device.device_code, 'tv')
          return { status: response.status, body: (await response.json()) as Record<string, unknown> }
        }),
      )
      await expectOneWinnerRevoked(results, [a, b], client, auth, round)
    }
  })
})
