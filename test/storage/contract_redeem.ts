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

    test(`${item}: concurrent calls of every outcome, made in one turn (a store may answer them in one statement), each get their own and write only their own`, async () => {
      const store = s()
      const { redeem, rotate } = methods(store)
      const at = n()
      const fresh = Array.from({ length: 6 }, () => code(at))
      const [spent, revokedCode, later] = [code(at), code(at), code(at)]
      const shared = { ...code(at), familyId: (fresh[0] as CodeRecord).familyId }
      for (const record of [...fresh, spent, revokedCode, later, shared]) await store.codes.insert(record)
      expect(await redeem(spent.id, at, { unlessRevoked: [spent.familyId], grant: grantOf(spent, at) })).toEqual({
        status: 'ok',
      })
      await store.revocations.revokeFamily(revokedCode.familyId, at + 60)
      type Call = { record: CodeRecord; at: number; expect: string }
      const calls: Call[] = [
        ...fresh.map((record) => ({ record, at, expect: 'ok' })),
        { record: spent, at, expect: 'replayed' },
        { record: revokedCode, at, expect: 'revoked' },
        { record: later, at: later.expiresAt + 1, expect: 'missing' },
        { record: { ...code(at), id: unique('unknown') }, at, expect: 'missing' },
        // The same code twice in one turn: one of them consumes it.
        { record: fresh[1] as CodeRecord, at, expect: 'ok|replayed' },
        // Another code of fresh[0]'s grant: both write the one grant record.
        { record: shared, at, expect: 'ok' },
      ]
      const tokens = calls.map(({ record }) => token(at, record.familyId))
      const results = await Promise.all(
        calls.map(({ record, at: when }, i) =>
          redeem(record.id, when, {
            unlessRevoked: [record.familyId],
            refreshToken: tokens[i] as RefreshTokenRecord,
            grant: grantOf(record, at),
          }),
        ),
      )
      const duplicate = [results[1]?.status, results[10]?.status].sort()
      expect(duplicate).toEqual(['ok', 'replayed'])
      results.forEach((result, i) => {
        const wanted = calls[i]?.expect as string
        if (wanted !== 'ok|replayed') expect({ i, status: result.status }).toEqual({ i, status: wanted })
      })
      const written = await Promise.all(tokens.map((t) => store.refreshTokens.get(t.id)))
      for (const [i, result] of results.entries()) {
        expect({ i, written: Boolean(written[i]) }).toEqual({ i, written: result.status === 'ok' })
      }
      for (const record of [...fresh, shared])
        expect(await store.codes.get(record.id)).toEqual({ ...record, consumedAt: at })
      expect(await store.codes.get(revokedCode.id)).toEqual(revokedCode)
      expect(await store.grants.get(revokedCode.familyId, at)).toBeUndefined()
      expect(await store.grants.get((fresh[0] as CodeRecord).familyId, at)).toBeDefined()

      // Rotations, the same way: live tokens rotate, a spent one is replayed, a revoked family and
      // an unknown token change nothing.
      const live = Array.from({ length: 5 }, () => token(at, unique('family')))
      const [used, blocked] = [token(at, unique('family')), token(at, unique('family'))]
      for (const record of [...live, used, blocked]) await store.refreshTokens.insert(record)
      expect(await rotate(used.id, token(at, used.familyId), at, [used.familyId])).toEqual({ status: 'ok' })
      await store.revocations.revokeFamily(blocked.familyId, at + 60)
      const presented = [...live, used, blocked, token(at, unique('family'))]
      const nexts = presented.map((record) => token(at, record.familyId))
      const rotated = await Promise.all(
        presented.map((record, i) => rotate(record.id, nexts[i] as RefreshTokenRecord, at, [record.familyId])),
      )
      expect(rotated.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'replayed', 'revoked', 'missing'])
      const next = await Promise.all(nexts.map((t) => store.refreshTokens.get(t.id)))
      expect(next.map(Boolean)).toEqual([true, true, true, true, true, false, false, false])
      expect(next[0]).toEqual(nexts[0])
      expect(await store.refreshTokens.get(blocked.id)).toEqual(blocked)
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
