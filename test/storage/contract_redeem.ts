/**
 * The optional one-step redemption and rotation of the storage contract (#44 item 1):
 * `codes.redeem` and `refreshTokens.rotateUnlessRevoked`, which PostgreSQL (and PGlite) run as one
 * statement each. Registered by describeStorageContract (contract.ts) for an adapter that says it
 * has them (`redeem: true`); the guarantees are `consume`'s and `rotate`'s, plus: a revoked family
 * changes nothing, and nothing is written unless this call consumed.
 */
import { describe, expect } from 'vitest'
import type { CodeRecord, GrantRecord, RefreshTokenRecord, Store } from '../../src/storage/types.ts'

let sequence = 0
function unique(prefix: string): string {
  sequence += 1
  return `${prefix}-${Date.now().toString(36)}-${sequence}-${Math.random().toString(36).slice(2, 8)}`
}

function code(now: number): CodeRecord {
  return {
    id: unique('code'),
    familyId: unique('family'),
    clientId: 'web',
    redirectUri: 'https://rp.example.test/cb',
    scope: 'openid offline_access',
    sub: unique('sub'),
    authTime: now - 10,
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    codeChallengeMethod: 'S256',
    issuedAt: now,
    expiresAt: now + 300,
  }
}

function token(now: number, familyId: string): RefreshTokenRecord {
  return {
    id: unique('rt'),
    familyId,
    clientId: 'web',
    sub: 'user-1',
    scope: 'openid offline_access',
    authTime: now - 10,
    issuedAt: now,
    expiresAt: now + 3600,
    familyExpiresAt: now + 86_400,
  }
}

function grantOf(record: CodeRecord, now: number): GrantRecord {
  return {
    id: record.familyId,
    clientId: record.clientId,
    sub: record.sub,
    scope: record.scope,
    kind: 'authorization_code',
    authTime: record.authTime,
    createdAt: now,
    expiresAt: now + 86_400,
  }
}

export interface RedeemContractEnv {
  store(): Store
  now(): number
  test(name: string, fn: () => Promise<void>): void
  /** The issue item the tests are named after (default `#44 item 1`: PostgreSQL's; Redis is item 2). */
  item?: string | undefined
}

function methods(store: Store) {
  const { redeem } = store.codes
  const { rotateUnlessRevoked } = store.refreshTokens
  if (!redeem || !rotateUnlessRevoked) throw new Error('expected codes.redeem and refreshTokens.rotateUnlessRevoked')
  return {
    redeem: redeem.bind(store.codes),
    rotate: rotateUnlessRevoked.bind(store.refreshTokens),
  }
}

export function describeRedeemContract({ store: s, now: n, test, item = '#44 item 1' }: RedeemContractEnv): void {
  describe(`codes.redeem and refreshTokens.rotateUnlessRevoked (${item})`, () => {
    test(`${item}: redeem consumes the code and writes the refresh token and the grant; again it is replayed and writes nothing`, async () => {
      const store = s()
      const { redeem } = methods(store)
      const record = code(n())
      await store.codes.insert(record)
      const refreshToken = token(n(), record.familyId)
      const grant = grantOf(record, n())
      const redemption = { unlessRevoked: [record.familyId], refreshToken, grant }
      expect(await redeem(record.id, n(), redemption)).toEqual({ status: 'ok' })
      expect(await store.codes.get(record.id)).toEqual({ ...record, consumedAt: n() })
      expect(await store.refreshTokens.get(refreshToken.id)).toEqual(refreshToken)
      expect(await store.grants.get(grant.id, n())).toEqual(grant)
      const again = { ...redemption, refreshToken: token(n(), record.familyId), grant: { ...grant, scope: 'other' } }
      expect(await redeem(record.id, n() + 1, again)).toEqual({ status: 'replayed' })
      expect(await store.refreshTokens.get(again.refreshToken.id)).toBeUndefined()
      expect(await store.grants.get(grant.id, n())).toEqual(grant)
      expect(await store.codes.get(record.id)).toEqual({ ...record, consumedAt: n() })
    })

    test(`${item}: redeem of a revoked family is revoked and changes nothing; without a refresh token only the grant is written`, async () => {
      const store = s()
      const { redeem } = methods(store)
      const record = code(n())
      await store.codes.insert(record)
      await store.revocations.revokeFamily('other-mark', n() + 60)
      const grant = grantOf(record, n())
      const refreshToken = token(n(), record.familyId)
      const revoked = { unlessRevoked: [record.familyId, 'other-mark'], refreshToken, grant }
      expect(await redeem(record.id, n(), revoked)).toEqual({ status: 'revoked' })
      expect(await store.codes.get(record.id)).toEqual(record)
      expect(await store.refreshTokens.get(refreshToken.id)).toBeUndefined()
      expect(await store.grants.get(grant.id, n())).toBeUndefined()
      expect(await redeem(record.id, n(), { unlessRevoked: [record.familyId], grant })).toEqual({ status: 'ok' })
      expect(await store.grants.get(grant.id, n())).toEqual(grant)
      expect(await redeem(unique('unknown'), n(), { unlessRevoked: [], grant })).toEqual({ status: 'missing' })
    })

    test(`${item}: an expired code or refresh token is missing and changes nothing; a revocation mark that has ended revokes nothing`, async () => {
      const store = s()
      const { redeem, rotate } = methods(store)
      const record = code(n())
      await store.codes.insert(record)
      const grant = grantOf(record, n())
      const refreshToken = token(n(), record.familyId)
      const late = record.expiresAt + 1
      expect(await redeem(record.id, late, { unlessRevoked: [record.familyId], refreshToken, grant })).toEqual({
        status: 'missing',
      })
      expect(await store.refreshTokens.get(refreshToken.id)).toBeUndefined()
      expect(await store.grants.get(grant.id, n())).toBeUndefined()
      const first = token(n(), unique('family'))
      await store.refreshTokens.insert(first)
      const next = token(n(), first.familyId)
      expect(await rotate(first.id, next, first.expiresAt + 1, [first.familyId])).toEqual({ status: 'missing' })
      expect(await store.refreshTokens.get(next.id)).toBeUndefined()
      // A mark kept until n() + 5 no longer revokes at n() + 10 (both steps compare with the caller's clock).
      await store.revocations.revokeFamily(`${first.familyId}#ended`, n() + 5)
      expect(await rotate(first.id, next, n() + 10, [first.familyId, `${first.familyId}#ended`])).toEqual({
        status: 'ok',
      })
      expect(await store.refreshTokens.get(next.id)).toEqual(next)
    })

    test(`${item}: of 20 concurrent redemptions of one code exactly one is ok and one refresh token is written`, async () => {
      const store = s()
      const { redeem } = methods(store)
      const record = code(n())
      await store.codes.insert(record)
      const tokens = Array.from({ length: 20 }, () => token(n(), record.familyId))
      const results = await Promise.all(
        tokens.map((refreshToken) =>
          redeem(record.id, n(), { unlessRevoked: [record.familyId], refreshToken, grant: grantOf(record, n()) }),
        ),
      )
      expect(results.filter((r) => r.status === 'ok')).toHaveLength(1)
      expect(results.filter((r) => r.status === 'replayed')).toHaveLength(19)
      const written = await Promise.all(tokens.map((t) => store.refreshTokens.get(t.id)))
      expect(written.filter(Boolean)).toHaveLength(1)
    })

    test(`${item}: rotateUnlessRevoked rotates once (20 concurrent: one ok, one next generation), refuses a revoked family or revision and changes nothing then`, async () => {
      const store = s()
      const { rotate } = methods(store)
      const first = token(n(), unique('family'))
      await store.refreshTokens.insert(first)
      await store.revocations.revokeFamily(`${first.familyId}#mark`, n() + 60)
      const blocked = token(n(), first.familyId)
      expect(await rotate(first.id, blocked, n(), [first.familyId, `${first.familyId}#mark`])).toEqual({
        status: 'revoked',
      })
      expect(await store.refreshTokens.get(first.id)).toEqual(first)
      expect(await store.refreshTokens.get(blocked.id)).toBeUndefined()
      const nexts = Array.from({ length: 20 }, () => token(n(), first.familyId))
      const results = await Promise.all(nexts.map((next) => rotate(first.id, next, n(), [first.familyId])))
      expect(results.filter((r) => r.status === 'ok')).toHaveLength(1)
      expect(results.filter((r) => r.status === 'replayed')).toHaveLength(19)
      const written = await Promise.all(nexts.map((t) => store.refreshTokens.get(t.id)))
      expect(written.filter(Boolean)).toHaveLength(1)
      expect(await store.refreshTokens.get(first.id)).toEqual({ ...first, consumedAt: n() })
      expect(await rotate(unique('unknown'), token(n(), 'f'), n(), [])).toEqual({ status: 'missing' })
    })
  })
}
