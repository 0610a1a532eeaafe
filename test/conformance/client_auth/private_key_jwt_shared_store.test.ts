/**
 * TOK-13 (RFC 7523 §3 item 7: a `jti` is used once): two service instances sharing one PostgreSQL
 * store (a fresh schema) see one replay record, so an assertion spent on one is refused by the
 * other, and of concurrent uses on both exactly one succeeds. Runs when DATABASE_URL is set.
 */
import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTokenService } from '../../../src/index.ts'
import { createPostgresStore } from '../../../src/storage/postgres.ts'
import { ISSUER } from '../../helpers/service.ts'
import { runSchema } from '../../storage/sql_helpers.ts'
import {
  type ClientKey,
  assertionRequest,
  clientKey,
  errorOf,
  keyClient,
  liveClock,
  signAssertion,
} from './private_key_jwt_fixtures.ts'

describe.runIf(process.env.DATABASE_URL)('TOK-13 jti replay across two instances on one PostgreSQL store', () => {
  const url = process.env.DATABASE_URL as string
  const schema = runSchema('pkjwt')
  const clock = liveClock()
  const stores: Array<ReturnType<typeof createPostgresStore>> = []
  let key: ClientKey

  /** One service instance with its own connection pool on the shared schema. */
  async function instance() {
    const store = createPostgresStore({ url, schema, now: clock.now })
    stores.push(store)
    const service = createTokenService({
      issuer: ISSUER,
      now: clock.now,
      store,
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
    })
    await service.clients.ensure(keyClient('kc', { jwks: { keys: [key.jwk] } }))
    await service.ready()
    return service
  }

  let first: Awaited<ReturnType<typeof instance>>
  let second: Awaited<ReturnType<typeof instance>>

  beforeAll(async () => {
    key = await clientKey('ES256')
    const migrator = createPostgresStore({ url, schema, now: clock.now })
    await migrator.migrate()
    await migrator.close()
    first = await instance()
    second = await instance()
  })

  afterAll(async () => {
    for (const store of stores) await store.close()
    const admin = postgresClient(url, { max: 1, onnotice: () => {} })
    await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })

  it('TOK-13 an assertion used on one instance is invalid_client on the other', async () => {
    const assertion = await signAssertion(key, 'kc', clock.now())
    expect((await first.fetch(assertionRequest(assertion))).status).toBe(200)
    const replay = await second.fetch(assertionRequest(assertion))
    expect(replay.status).toBe(401)
    expect(await errorOf(replay)).toEqual({
      error: 'invalid_client',
      error_description: 'client_assertion has already been used',
    })
  })

  it('TOK-13 of 10 concurrent uses of one assertion on both instances, exactly one gets a token', async () => {
    const assertion = await signAssertion(key, 'kc', clock.now())
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? first : second).fetch(assertionRequest(assertion))),
    )
    const statuses = responses.map((response) => response.status).sort()
    expect(statuses).toEqual([200, ...Array(9).fill(401)])
  })
})
