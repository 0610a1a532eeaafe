/**
 * @module storage/redis_redeem
 * The Redis store's one-step redemption and rotation (#44 item 2): `codes.redeem` and
 * `refreshTokens.rotateUnlessRevoked`, each one Lua script (one round trip, atomic on the server)
 * where the grants made three or four: the family's revocation marks are read, then the code (or
 * the refresh token) is consumed and, only if this call consumed it, the refresh token is stored
 * (and for a code the grant's record and its end-user index are put, as `grants.put`), in the same
 * script. A revoked family changes nothing and wins over the other outcomes, as the separate check
 * did by coming first; nothing of the record is returned (the caller read it), so nothing is decoded.
 *
 * One node only (a Sentinel-managed primary included): on a Redis Cluster the code, the refresh
 * token, the grant, its index and the marks live in different hash slots, which one script cannot
 * reach, so the cluster store has neither method and the grants take their steps (the key layout,
 * and so existing data, stays as it is). Both scripts are in redis_wait.ts's DURABLE_COMMANDS: with
 * `waitReplicas` they are sent with WAIT, as the consume and rotate they replace.
 */
import type { Redis } from 'ioredis'
import { GRANT_PUT_LUA, grantPutArgs } from './redis_grants.ts'
import type { Redeemed, RefreshTokenRecord, Store } from './types.ts'

// Keys KEYS[first..] are revocation marks holding their end (epoch s): 3 (revoked) when one is live at ARGV[at].
const REVOKED = (first: string, at: string) => `
for i = ${first}, #KEYS do
  local mark = redis.call('GET', KEYS[i])
  if mark and tonumber(mark) > tonumber(ARGV[${at}]) then return 3 end
end`

// A one-time hash KEYS[key] {r, e, c} consumed at ARGV[at]: 0 missing or expired, 2 consumed before.
const CONSUME = (key: number, at: number) => `
local once = redis.call('HMGET', KEYS[${key}], 'r', 'e', 'c')
if not once[1] or tonumber(once[2]) <= tonumber(ARGV[${at}]) then return 0 end
if once[3] then return 2 end
redis.call('HSET', KEYS[${key}], 'c', ARGV[${at}])`

// KEYS grant record, grant index, code, [next refresh token], marks…; ARGV the four of
// GRANT_PUT_LUA, at, refresh token record ('' none), its end, its ttl. Answers 0 missing, 1 ok,
// 2 replayed, 3 revoked.
export const REDEEM = `
local first = 5
if ARGV[6] == '' then first = 4 end
${REVOKED('first', '5')}
${CONSUME(3, 5)}
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[4], 'r', ARGV[6], 'e', ARGV[7])
  redis.call('EXPIRE', KEYS[4], ARGV[8])
end
${GRANT_PUT_LUA}
return 1`

// KEYS token, next token, marks…; ARGV at, next record, its end, its ttl. Answers as REDEEM.
export const ROTATE_UNLESS_REVOKED = `
${REVOKED('3', '1')}
${CONSUME(1, 1)}
redis.call('HSET', KEYS[2], 'r', ARGV[2], 'e', ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1`

const OUTCOMES: Redeemed['status'][] = ['missing', 'ok', 'replayed', 'revoked']

/** The scripts, defined without a key count: each call gives its own (the marks vary). */
interface RedeemScripts {
  gatehouseRedeem(keys: number, ...args: Array<string | number>): Promise<number>
  gatehouseRotateUnlessRevoked(keys: number, ...args: Array<string | number>): Promise<number>
}

/** What the scripts need of the store. */
export interface RedeemParts {
  /** The store's client (with waitReplicas, the one that sends these scripts with WAIT). */
  redis: Redis
  k: (kind: string, id: string) => string
  ttl: (expiresAt: number) => number
  run: <R>(operation: string, fn: () => Promise<R>) => Promise<R>
}

function outcome(answer: number): Redeemed {
  const status = OUTCOMES[answer]
  if (!status) throw new Error(`unexpected answer of a redemption script: ${answer}`)
  return { status }
}

/** `codes.redeem` and `refreshTokens.rotateUnlessRevoked` on one Redis node (see the module comment). */
export function redisRedemption(parts: RedeemParts): {
  redeem: NonNullable<Store['codes']['redeem']>
  rotateUnlessRevoked(id: string, next: RefreshTokenRecord, now: number, unlessRevoked: string[]): Promise<Redeemed>
} {
  const { k, ttl, run } = parts
  parts.redis.defineCommand('gatehouseRedeem', { lua: REDEEM })
  parts.redis.defineCommand('gatehouseRotateUnlessRevoked', { lua: ROTATE_UNLESS_REVOKED })
  const redis = parts.redis as Redis & RedeemScripts
  const marks = (families: string[]) => families.map((family) => k('revoked-family', family))
  return {
    redeem: (id, now, { unlessRevoked, refreshToken, grant }) =>
      run('codes.redeem', async () => {
        const keys = [k('grant', grant.id), k('grants-of', grant.sub), k('code', id)]
        if (refreshToken) keys.push(k('rt', refreshToken.id))
        keys.push(...marks(unlessRevoked))
        const token = refreshToken
          ? [JSON.stringify(refreshToken), refreshToken.expiresAt, ttl(refreshToken.expiresAt)]
          : ['', 0, 0]
        const args = [...grantPutArgs(grant, ttl(grant.expiresAt)), now, ...token]
        return outcome(await redis.gatehouseRedeem(keys.length, ...keys, ...args))
      }),
    rotateUnlessRevoked: (id, next, now, unlessRevoked) =>
      run('refreshTokens.rotateUnlessRevoked', async () => {
        const keys = [k('rt', id), k('rt', next.id), ...marks(unlessRevoked)]
        const args = [now, JSON.stringify(next), next.expiresAt, ttl(next.expiresAt)]
        return outcome(await redis.gatehouseRotateUnlessRevoked(keys.length, ...keys, ...args))
      }),
  }
}
