/**
 * Per-instance client cache: bounded staleness. Two services share one store (two instances); a
 * client deleted on one stops working on the other within the documented 5 seconds.
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { basic, clock, form, makeService } from '../../helpers/service.ts'

describe('client cache staleness across instances', () => {
  it('a deleted client stops working on another instance within 5 seconds', async () => {
    const time = clock()
    const store = createMemoryStore({ now: time.now })
    const a = await makeService({ store, now: time.now })
    const b = await makeService({ store, now: time.now })
    const request = () =>
      b.service.fetch(
        form(
          b.service.endpoints.token,
          { grant_type: 'client_credentials' },
          { authorization: basic('service', 'service-secret') },
        ),
      )
    expect((await request()).status).toBe(200)
    await a.service.clients.delete('service')
    time.advance(5)
    const response = await request()
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })
})
