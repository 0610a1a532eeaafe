/**
 * @module storage/redis_ciba
 * The backchannel authentication requests of the Redis store (`Store.cibaRequests`, OpenID CIBA).
 * As for device codes (redis_device_codes.ts): a hash under `ciba:<id>` with the record as inserted
 * (`r`) and what changes later in fields of their own (`s` status, `l` login, `i` interval, `p`
 * polledAt, `c` consumedAt) beside its end (`e`). It lives `CIBA_REQUEST_RETENTION` seconds past
 * its end (a late poll learns `expired_token`); `ciba-approval:<approval id>` holds the id during
 * its lifetime only. Decide and poll are each one Lua script: atomic on the server, across every
 * instance.
 */
import type { Redis } from 'ioredis'
import { CIBA_REQUEST_RETENTION, type CibaPoll, type CibaRequestRecord, type Store } from './types.ts'
import { DECIDE, type Fields, POLL, toRecord } from './redis_device_codes.ts'

// The device codes' scripts and fields (redis_device_codes.ts): a CIBA request is decided and polled alike.

interface CibaScripts {
  gatehouseCibaDecide(key: string, at: number, status: string, login: string): Promise<number>
  gatehouseCibaPoll(key: string, at: number, retention: number): Promise<[string, ...Fields]>
}

/**
 * `Store.cibaRequests` over Redis. Defines its scripts on the client; `key` prefixes a key, `now`
 * is the store's clock (native expiry), `run` maps failures to 503.
 */
export function redisCibaRequests(
  client: Redis,
  key: (kind: string, id: string) => string,
  now: () => number,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['cibaRequests'] {
  client.defineCommand('gatehouseCibaDecide', { numberOfKeys: 1, lua: DECIDE })
  client.defineCommand('gatehouseCibaPoll', { numberOfKeys: 1, lua: POLL })
  const redis = client as Redis & CibaScripts
  const ttl = (end: number) => Math.max(1, end - now())

  /** The record's fields within its retention (the store's clock), or undefined. */
  async function read(id: string): Promise<CibaRequestRecord | undefined> {
    const fields = await redis.hmget(key('ciba', id), 'r', 's', 'l', 'i', 'p', 'c', 'e')
    if (Number(fields[6]) + CIBA_REQUEST_RETENTION <= now()) return undefined
    return toRecord<CibaRequestRecord>(fields)
  }

  return {
    insert: (record) =>
      run('cibaRequests.insert', async () => {
        const fields: Array<string | number> = ['r', JSON.stringify(record), 's', record.status]
        fields.push('i', record.interval, 'e', record.expiresAt)
        if (record.login) fields.push('l', JSON.stringify(record.login))
        if (record.polledAt !== undefined) fields.push('p', record.polledAt)
        if (record.consumedAt !== undefined) fields.push('c', record.consumedAt)
        const approval = [key('ciba-approval', record.approvalId), record.id, 'EX', ttl(record.expiresAt)] as const
        const transaction = redis
          .multi()
          .hset(key('ciba', record.id), ...fields)
          .expire(key('ciba', record.id), ttl(record.expiresAt + CIBA_REQUEST_RETENTION))
        // On a Redis Cluster the approval link is in another slot: written after the request, so a
        // failure between leaves a request no approval finds (the insert failed: nobody polls it).
        if (!client.isCluster) transaction.set(...approval)
        await transaction.exec()
        if (client.isCluster) await redis.set(...approval)
      }),
    get: (id) => run('cibaRequests.get', () => read(id)),
    findByApproval: (approvalId, at) =>
      run('cibaRequests.findByApproval', async () => {
        const id = await redis.get(key('ciba-approval', approvalId))
        if (id === null) return undefined
        const record = await read(id)
        return record && record.approvalId === approvalId && record.expiresAt > at ? record : undefined
      }),
    decide: (id, decision, at) =>
      run('cibaRequests.decide', async () => {
        const login = decision.status === 'approved' ? JSON.stringify(decision.login) : ''
        return (await redis.gatehouseCibaDecide(key('ciba', id), at, decision.status, login)) === 1
      }),
    poll: (id, at) =>
      run('cibaRequests.poll', async (): Promise<CibaPoll> => {
        const [answer, ...fields] = await redis.gatehouseCibaPoll(key('ciba', id), at, CIBA_REQUEST_RETENTION)
        const record = toRecord<CibaRequestRecord>(fields)
        if (answer === 'missing' || !record) return { status: 'missing' }
        return { status: answer as Exclude<CibaPoll['status'], 'missing'>, record }
      }),
  }
}
