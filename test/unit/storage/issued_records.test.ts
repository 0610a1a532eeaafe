import { describe, expect, it } from 'vitest'
import { createIssuedRecords } from '../../../src/storage/issued_records.ts'
import type { RefreshTokenRecord } from '../../../src/storage/types.ts'

function token(id: string, expiresAt: number, consumedAt?: number): RefreshTokenRecord {
  return {
    id,
    familyId: 'f',
    clientId: 'c',
    sub: 'alice',
    scope: 'openid',
    issuedAt: 0,
    expiresAt,
    familyExpiresAt: expiresAt,
    ...(consumedAt !== undefined ? { consumedAt } : {}),
  } as RefreshTokenRecord
}

describe('storage/issued_records (#44)', () => {
  it('keeps a record until it expires, then forgets it', () => {
    const issued = createIssuedRecords(10)
    issued.refreshTokens.set(token('a', 100))
    expect(issued.refreshTokens.get('a', 99)?.id).toBe('a')
    expect(issued.refreshTokens.get('a', 100)).toBeUndefined()
    expect(issued.refreshTokens.size).toBe(0)
  })

  it('never keeps whether a record was consumed: the store decides that', () => {
    const issued = createIssuedRecords(10)
    issued.refreshTokens.set(token('a', 100, 50))
    expect(issued.refreshTokens.get('a', 60)).not.toHaveProperty('consumedAt')
  })

  it('holds at most max records of each kind, the oldest going first', () => {
    const issued = createIssuedRecords(2)
    for (const id of ['a', 'b', 'c']) issued.refreshTokens.set(token(id, 100))
    expect(issued.refreshTokens.size).toBe(2)
    expect(issued.refreshTokens.get('a', 0)).toBeUndefined()
    expect(issued.refreshTokens.get('c', 0)?.id).toBe('c')
    expect(issued.codes.size).toBe(0)
  })

  it('keeps nothing with max 0, and forgets a record deleted', () => {
    const none = createIssuedRecords(0)
    none.refreshTokens.set(token('a', 100))
    expect(none.refreshTokens.get('a', 0)).toBeUndefined()
    const issued = createIssuedRecords(5)
    issued.refreshTokens.set(token('a', 100))
    issued.refreshTokens.delete('a')
    expect(issued.refreshTokens.get('a', 0)).toBeUndefined()
  })
})
