/**
 * @module storage/redis_device_codes
 * The device authorizations of the Redis store (`Store.deviceCodes`, RFC 8628). A record is a hash
 * under `device:<id>`: the record as inserted (`r`), and what changes later in fields of their own
 * (`s` status, `l` login, `i` interval, `p` polledAt, `c` consumedAt) beside its end (`e`), so no
 * script re-encodes the record. It lives `DEVICE_CODE_RETENTION` seconds past its end (a late poll
 * learns `expired_token`); `device-user:<user code>` holds `<end>:<id>` during its lifetime only.
 * Insert, decide and poll are each one Lua script: atomic on the server, across every instance (on
 * a Redis Cluster, insert is three one-slot steps: `insertInCluster`).
 *
 * @see https://www.rfc-editor.org/rfc/rfc8628#section-3.5
 */
import type { Redis } from 'ioredis'
import {
  type CibaRequestRecord,
  DEVICE_CODE_RETENTION,
  type DeviceCodeRecord,
  type DevicePoll,
  type Store,
} from './types.ts'

// KEYS user-code key, record key; ARGV now, `<end>:<id>`, user-code ttl, record ttl, then the
// record's field/value pairs. Refused (0) while a live record holds the user code; an expired
// holder's code is taken over (its record stays, for late polls).
const INSERT = `
local holder = redis.call('GET', KEYS[1])
if holder and tonumber(string.match(holder, '^(%d+):')) > tonumber(ARGV[1]) then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
redis.call('HSET', KEYS[2], unpack(ARGV, 5))
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1`

// On a Redis Cluster the user code and the record are in two slots: INSERT in three steps.
// CLAIM: KEYS user-code key; ARGV now, `<end>:<id>`, ttl. Takes the user code as INSERT does.
const CLAIM = `
local holder = redis.call('GET', KEYS[1])
if holder and tonumber(string.match(holder, '^(%d+):')) > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1`

// PUT_NEW: KEYS record key; ARGV record ttl, then the field/value pairs. Refused (0) when it exists.
const PUT_NEW = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1`

// RELEASE: KEYS user-code key; ARGV `<end>:<id>`. Gives the user code back while this claim holds it.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`

// KEYS record key; ARGV now, status, login JSON ('' for none). Only a pending, unexpired record.
export const DECIDE = `
if redis.call('HGET', KEYS[1], 's') ~= 'pending' then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'e')) <= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'l', ARGV[3]) end
return 1`

// KEYS record key; ARGV now, retention. Returns {answer, r, s, l, i, p, c, e} as the record now is.
export const POLL = `
local f = redis.call('HMGET', KEYS[1], 'r', 's', 'i', 'p', 'c', 'e')
if not f[1] then return {'missing'} end
local at = tonumber(ARGV[1])
local e = tonumber(f[6])
if e + tonumber(ARGV[2]) <= at then return {'missing'} end
local answer = 'pending'
if f[5] then answer = 'replayed'
elseif e <= at then answer = 'expired'
elseif f[2] == 'denied' then answer = 'denied'
elseif f[2] == 'approved' then
  answer = 'ok'
  redis.call('HSET', KEYS[1], 'c', ARGV[1])
else
  local i = tonumber(f[3])
  if f[4] and at - tonumber(f[4]) < i then
    answer = 'slow_down'
    i = i + 5
  end
  redis.call('HSET', KEYS[1], 'i', i, 'p', ARGV[1])
end
local now = redis.call('HMGET', KEYS[1], 'r', 's', 'l', 'i', 'p', 'c', 'e')
return {answer, now[1], now[2], now[3], now[4], now[5], now[6], now[7]}`

/** A record's hash fields `r, s, l, i, p, c, e`, as HMGET and the poll script answer them. */
export type Fields = Array<string | null>

interface DeviceCodeScripts {
  gatehouseDeviceInsert(userKey: string, key: string, ...args: Array<string | number>): Promise<number>
  gatehouseDeviceDecide(key: string, at: number, status: string, login: string): Promise<number>
  gatehouseDevicePoll(key: string, at: number, retention: number): Promise<[string, ...Fields]>
  gatehouseDeviceClaim(userKey: string, at: number, holder: string, ttl: number): Promise<number>
  gatehouseDevicePutNew(key: string, ttl: number, ...fields: Array<string | number>): Promise<number>
  gatehouseDeviceRelease(userKey: string, holder: string): Promise<number>
}

/**
 * A device authorization inserted on a Redis Cluster: the user code claimed (the one atomic step,
 * so two records never hold one user code), then the record stored unless its id exists (then the
 * claim is given back). A failure between the steps leaves the user code held, naming no record
 * (`findByUserCode` finds nothing), until its end; the insert failed, so no device shows that code.
 */
async function insertInCluster(
  redis: Redis & DeviceCodeScripts,
  keys: { user: string; record: string },
  at: number,
  holder: string,
  ttls: { user: number; record: number },
  fields: Array<string | number>,
): Promise<boolean> {
  if ((await redis.gatehouseDeviceClaim(keys.user, at, holder, ttls.user)) !== 1) return false
  if ((await redis.gatehouseDevicePutNew(keys.record, ttls.record, ...fields)) === 1) return true
  await redis.gatehouseDeviceRelease(keys.user, holder)
  return false
}

/**
 * The record from its fields `r, s, l, i, p, c, e`, or undefined when there is none: a device
 * authorization, or a CIBA request (redis_ciba.ts keeps its requests the same way).
 */
export function toRecord<T extends DeviceCodeRecord | CibaRequestRecord>([r, s, l, i, p, c]: Fields): T | undefined {
  if (r == null) return undefined
  const { login: _login, polledAt: _polledAt, consumedAt: _consumedAt, ...base } = JSON.parse(r) as T
  return {
    ...base,
    status: s as T['status'],
    interval: Number(i),
    ...(l == null ? {} : { login: JSON.parse(l) as NonNullable<T['login']> }),
    ...(p == null ? {} : { polledAt: Number(p) }),
    ...(c == null ? {} : { consumedAt: Number(c) }),
  } as T
}

/**
 * `Store.deviceCodes` over Redis. Defines its scripts on the client; `key` prefixes a key, `now` is
 * the store's clock (native expiry), `run` maps failures to 503.
 */
export function redisDeviceCodes(
  client: Redis,
  key: (kind: string, id: string) => string,
  now: () => number,
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>,
): Store['deviceCodes'] {
  client.defineCommand('gatehouseDeviceInsert', { numberOfKeys: 2, lua: INSERT })
  client.defineCommand('gatehouseDeviceDecide', { numberOfKeys: 1, lua: DECIDE })
  client.defineCommand('gatehouseDevicePoll', { numberOfKeys: 1, lua: POLL })
  client.defineCommand('gatehouseDeviceClaim', { numberOfKeys: 1, lua: CLAIM })
  client.defineCommand('gatehouseDevicePutNew', { numberOfKeys: 1, lua: PUT_NEW })
  client.defineCommand('gatehouseDeviceRelease', { numberOfKeys: 1, lua: RELEASE })
  const redis = client as Redis & DeviceCodeScripts
  const ttl = (end: number) => Math.max(1, end - now())

  /** The record's fields within its retention (the store's clock), or undefined. */
  async function read(id: string): Promise<DeviceCodeRecord | undefined> {
    const fields = await redis.hmget(key('device', id), 'r', 's', 'l', 'i', 'p', 'c', 'e')
    if (Number(fields[6]) + DEVICE_CODE_RETENTION <= now()) return undefined
    return toRecord<DeviceCodeRecord>(fields)
  }

  return {
    insert: (record, at) =>
      run('deviceCodes.insert', async () => {
        const fields: Array<string | number> = ['r', JSON.stringify(record), 's', record.status]
        fields.push('i', record.interval, 'e', record.expiresAt)
        if (record.login) fields.push('l', JSON.stringify(record.login))
        if (record.polledAt !== undefined) fields.push('p', record.polledAt)
        if (record.consumedAt !== undefined) fields.push('c', record.consumedAt)
        const keys = { user: key('device-user', record.userCode), record: key('device', record.id) }
        const holder = `${record.expiresAt}:${record.id}`
        const ttls = { user: ttl(record.expiresAt), record: ttl(record.expiresAt + DEVICE_CODE_RETENTION) }
        if (client.isCluster) return insertInCluster(redis, keys, at, holder, ttls, fields)
        const inserted = await redis.gatehouseDeviceInsert(
          keys.user,
          keys.record,
          at,
          holder,
          ttls.user,
          ttls.record,
          ...fields,
        )
        return inserted === 1
      }),
    get: (id) => run('deviceCodes.get', () => read(id)),
    findByUserCode: (userCode, at) =>
      run('deviceCodes.findByUserCode', async () => {
        const holder = await redis.get(key('device-user', userCode))
        const match = holder === null ? null : /^(\d+):(.*)$/s.exec(holder)
        if (!match || Number(match[1]) <= at) return undefined
        const record = await read(match[2] as string)
        return record && record.userCode === userCode && record.expiresAt > at ? record : undefined
      }),
    decide: (id, decision, at) =>
      run('deviceCodes.decide', async () => {
        const login = decision.status === 'approved' ? JSON.stringify(decision.login) : ''
        return (await redis.gatehouseDeviceDecide(key('device', id), at, decision.status, login)) === 1
      }),
    poll: (id, at) =>
      run('deviceCodes.poll', async (): Promise<DevicePoll> => {
        const [answer, ...fields] = await redis.gatehouseDevicePoll(key('device', id), at, DEVICE_CODE_RETENTION)
        const record = toRecord<DeviceCodeRecord>(fields)
        if (answer === 'missing' || !record) return { status: 'missing' }
        return { status: answer as Exclude<DevicePoll['status'], 'missing'>, record }
      }),
  }
}
