/**
 * The storage contract on Redis. Needs REDIS_URL (CI sets it to the local server); each test uses
 * its own key prefix and deletes its keys afterwards.
 */
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.ts'
import { type RedisStore, createRedisStore } from '../../src/storage/redis.ts'
import {
  codeRecord,
  describeStorageContract,
  grantRecord,
  interactionRecord,
  refreshRecord,
  uniqueId,
} from './contract.ts'

const url = process.env.REDIS_URL

describe.runIf(url)('Redis store', () => {
  let prefix = ''
  describeStorageContract({
    name: 'redis',
    redeem: true,
    redeemItem: '#44 item 2',
    async create({ now }) {
      prefix = `${uniqueId('gh-test')}:`
      const store = createRedisStore({ url: url as string, prefix, now })
      await store.connect()
      return store
    },
    async cleanup() {
      // The contract closed the store: delete this test's keys over a new connection.
      const sweeper: RedisStore = createRedisStore({ url: url as string, prefix })
      await sweeper.connect()
      await sweeper.clear()
      await sweeper.close()
    },
  })

  it('an unreachable server fails with StoreUnavailableError, at connect and per operation', async () => {
    const store = createRedisStore({ url: 'redis://127.0.0.1:1', connectTimeout: 1000 })
    await expect(store.connect()).rejects.toThrow(/cannot connect to Redis at 127\.0\.0\.1:1/)
    await expect(store.clients.get('x')).rejects.toBeInstanceOf(StoreUnavailableError)
    await store.close()
  })

  it('#43 item 4: with waitReplicas, a write no replica acknowledged fails (503) and names the shortfall; other writes go on', async () => {
    // The local server has no replica: WAIT answers 0 after waitTimeout.
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({
      url: url as string,
      prefix: `${uniqueId('gh-wait')}:`,
      waitReplicas: 1,
      waitTimeout: 20,
    })
    await store.connect()
    try {
      const code = codeRecord(now)
      const refused = store.codes.insert(code)
      await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(refused).rejects.toThrow(/during codes\.insert/)
      expect(((await refused.catch((err: Error) => err)) as Error).cause).toMatchObject({
        message: '0 of 1 replicas acknowledged a write within 20 ms',
      })
      // The write itself happened on the primary (failing closed promises nothing, loses nothing).
      expect(await store.codes.get(code.id)).toMatchObject({ id: code.id })
      await expect(store.codes.consume(code.id, now)).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(store.revocations.revokeFamily('f', now + 60)).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(store.replays.use('jti', now + 60, now)).rejects.toBeInstanceOf(StoreUnavailableError)
      // A logout lost would bring the session back: its deletion waits too.
      await expect(store.sessions.delete('s')).rejects.toBeInstanceOf(StoreUnavailableError)
      // Writes whose loss costs a retry, not a double use, do not wait.
      await store.interactions.put(interactionRecord(now))
    } finally {
      await store.clear()
      await store.close()
    }
  })

  it('#43 review: a write waiting for replicas holds none of the store’s other commands (WAIT has connections of its own)', async () => {
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({
      url: url as string,
      prefix: `${uniqueId('gh-wait')}:`,
      waitReplicas: 1,
      waitTimeout: 400,
    })
    await store.connect()
    try {
      const code = codeRecord(now)
      await store.interactions.put(interactionRecord(now))
      const waiting = store.codes.insert(code).catch(() => 'refused')
      await new Promise((resolve) => setTimeout(resolve, 20))
      const started = performance.now()
      expect(await store.codes.get(code.id)).toMatchObject({ id: code.id })
      expect(performance.now() - started).toBeLessThan(200)
      expect(await waiting).toBe('refused')
    } finally {
      await store.clear()
      await store.close()
    }
  })

  it('#44 item 2: with waitReplicas, codes.redeem and rotateUnlessRevoked wait for replicas (503 without one); the script ran on the primary', async () => {
    // The local server has no replica: WAIT answers 0 after waitTimeout.
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({
      url: url as string,
      prefix: `${uniqueId('gh-wait')}:`,
      waitReplicas: 1,
      waitTimeout: 20,
    })
    await store.connect()
    try {
      const { redeem } = store.codes
      const { rotateUnlessRevoked } = store.refreshTokens
      if (!redeem || !rotateUnlessRevoked) throw new Error('expected the one-step redemption on one node')
      const code = codeRecord(now)
      await store.codes.insert(code).catch(() => {}) // written, unacknowledged
      const token = refreshRecord(now, { familyId: code.familyId })
      const grant = grantRecord(now, { id: code.familyId })
      const redeemed = redeem.call(store.codes, code.id, now, {
        unlessRevoked: [code.familyId],
        refreshToken: token,
        grant,
      })
      await expect(redeemed).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(redeemed).rejects.toThrow(/during codes\.redeem/)
      expect(await store.codes.get(code.id)).toMatchObject({ consumedAt: now })
      expect(await store.refreshTokens.get(token.id)).toEqual(token)
      const next = refreshRecord(now, { familyId: code.familyId })
      const rotated = rotateUnlessRevoked.call(store.refreshTokens, token.id, next, now, [code.familyId])
      await expect(rotated).rejects.toThrow(/during refreshTokens\.rotateUnlessRevoked/)
      expect(await store.refreshTokens.get(next.id)).toEqual(next)
    } finally {
      await store.clear()
      await store.close()
    }
  })

  it('#43 item 4: waitReplicas and waitTimeout are checked', () => {
    expect(() => createRedisStore({ url: url as string, waitReplicas: -1 })).toThrow(
      /waitReplicas: must be an integer from 0 to 16/,
    )
    expect(() => createRedisStore({ url: url as string, waitReplicas: 1.5 })).toThrow(/waitReplicas/)
    expect(() => createRedisStore({ url: url as string, waitReplicas: 1, waitTimeout: 0 })).toThrow(
      /waitTimeout: must be an integer/,
    )
  })

  it('#39 the index of an end-user’s grants lives as long as its longest grant (a shorter one put later does not shorten it)', async () => {
    const { default: Redis } = await import('ioredis')
    const indexPrefix = `${uniqueId('gh-grants')}:`
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({ url: url as string, prefix: indexPrefix, now: () => now })
    await store.connect()
    const raw = new Redis(url as string)
    try {
      const sub = uniqueId('sub')
      await store.grants.put(grantRecord(now, { sub, expiresAt: now + 86_400 }))
      await store.grants.put(grantRecord(now, { sub, expiresAt: now + 60 }))
      expect(await raw.ttl(`${indexPrefix}grants-of:${sub}`)).toBeGreaterThan(86_000)
      expect(await raw.ttl(`${indexPrefix}grant:${(await store.grants.listBySub(sub, now))[0]?.id}`)).toBeGreaterThan(0)
    } finally {
      raw.disconnect()
      await store.clear()
      await store.close()
    }
  })

  it("#42 item 1: delete takes the id out of its end-user's index at once; touch keeps the key's expiry and rewrites only lastUsedAt", async () => {
    const { default: Redis } = await import('ioredis')
    const keyPrefix = `${uniqueId('gh-grants')}:`
    const now = Math.floor(Date.now() / 1000)
    const store = createRedisStore({ url: url as string, prefix: keyPrefix, now: () => now })
    await store.connect()
    const raw = new Redis(url as string)
    try {
      const sub = uniqueId('sub')
      const [gone, kept] = [grantRecord(now, { sub, expiresAt: now + 600 }), grantRecord(now, { sub })]
      await store.grants.put(gone)
      await store.grants.put(kept)
      await store.grants.delete(gone.id)
      expect(await raw.smembers(`${keyPrefix}grants-of:${sub}`)).toEqual([kept.id])
      await store.grants.delete(kept.id)
      expect(await raw.exists(`${keyPrefix}grants-of:${sub}`)).toBe(0)

      const record = grantRecord(now, { sub, expiresAt: now + 600 })
      await store.grants.put(record)
      const key = `${keyPrefix}grant:${record.id}`
      await raw.expire(key, 300) // the key's own expiry, whatever it is, survives a touch
      await store.grants.touch?.(record.id, now + 60)
      expect(await raw.ttl(key)).toBeGreaterThan(290)
      expect(await raw.ttl(key)).toBeLessThanOrEqual(300)
      expect(await raw.get(key)).toBe(`{"lastUsedAt":${now + 60},${JSON.stringify(record).slice(1)}`)
    } finally {
      raw.disconnect()
      await store.clear()
      await store.close()
    }
  })

  it('#20 revocation checks asked together (introspection: the token and its grant) are one MGET', async () => {
    // Counted on the client (ioredis's sendCommand), not with MONITOR: a MONITOR connection beside
    // other test files' traffic once failed in ioredis ("Command queue state error").
    const { Redis } = await import('ioredis')
    const prefix = `${uniqueId('gh-mget')}:`
    const store = createRedisStore({ url: url as string, prefix })
    await store.connect()
    const commands: string[] = []
    const send = Redis.prototype.sendCommand
    Redis.prototype.sendCommand = function (this: InstanceType<typeof Redis>, command, stream) {
      const { name, args } = command as unknown as { name: string; args: unknown[] }
      if (args.some((arg) => String(arg).startsWith(prefix))) commands.push(name.toLowerCase())
      return send.call(this, command, stream)
    } as typeof send
    try {
      await store.revocations.revokeFamily('family-1', Math.floor(Date.now() / 1000) + 60)
      commands.length = 0
      const answers = await Promise.all([
        store.revocations.isAccessTokenRevoked('jti-1'),
        store.revocations.isFamilyRevoked('family-1'),
      ])
      expect(answers).toEqual([false, true])
      expect(commands).toEqual(['mget'])
    } finally {
      Redis.prototype.sendCommand = send
      await store.clear()
      await store.close()
    }
  })
})
