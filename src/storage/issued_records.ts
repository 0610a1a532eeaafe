/**
 * @module storage/issued_records
 * The authorization codes and refresh tokens this instance wrote, kept in process so that their
 * redemption skips the store's read (#44: on a persistent store that read is a round trip of
 * its own before the atomic step). Only what never changes is taken from here: a record's fields
 * are written once, and the one thing that changes, whether it was consumed, and the other, whether
 * its family was revoked, are decided by the store's atomic step (`codes.redeem` / `consume`,
 * `refreshTokens.rotateUnlessRevoked` / `rotate`) on every redemption, whichever instance made the
 * record. A record kept here therefore never has `consumedAt`; a replay is found by the atomic step.
 *
 * Introspection and revocation read the store (they report what the store holds). Bounded: the
 * oldest entries go first; an entry goes when its record is consumed here or has expired.
 */
import type { CodeRecord, RefreshTokenRecord } from './types.ts'

/** A bounded map of records by id, each until its `expiresAt` (epoch seconds). */
export interface RecordMemo<T extends { id: string; expiresAt: number }> {
  /** The record kept under `id`, unless it expired at `now`. */
  get(id: string, now: number): T | undefined
  /** Keeps `record` (a copy without `consumedAt`). */
  set(record: T): void
  delete(id: string): void
  readonly size: number
}

/** Codes and refresh tokens written by this instance; `max` entries of each (0: keeps none). */
export interface IssuedRecords {
  codes: RecordMemo<CodeRecord>
  refreshTokens: RecordMemo<RefreshTokenRecord>
}

function recordMemo<T extends { id: string; expiresAt: number; consumedAt?: number }>(max: number): RecordMemo<T> {
  const entries = new Map<string, T>()
  return {
    get(id, now) {
      const record = entries.get(id)
      if (record === undefined) return undefined
      if (record.expiresAt <= now) {
        entries.delete(id)
        return undefined
      }
      return record
    },
    set(record) {
      if (max <= 0) return
      if (entries.size >= max && !entries.has(record.id)) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
      const { consumedAt: _, ...unconsumed } = record
      entries.set(record.id, unconsumed as T)
    },
    delete(id) {
      entries.delete(id)
    },
    get size() {
      return entries.size
    },
  }
}

/** The records an instance wrote, at most `max` codes and `max` refresh tokens. */
export function createIssuedRecords(max: number): IssuedRecords {
  return { codes: recordMemo<CodeRecord>(max), refreshTokens: recordMemo<RefreshTokenRecord>(max) }
}

/**
 * Awaits the atomic step that redeems `id` (a code, or a refresh token: `spent`): whatever it
 * decided, `id` is done with in this instance; the refresh token it issued, if any, is kept.
 */
export async function afterRedemption<T extends { refreshRecord?: RefreshTokenRecord | undefined }>(
  issued: IssuedRecords,
  spent: 'codes' | 'refreshTokens',
  id: string,
  redemption: Promise<T>,
): Promise<T> {
  try {
    const done = await redemption
    if (done.refreshRecord) issued.refreshTokens.set(done.refreshRecord)
    return done
  } finally {
    issued[spent].delete(id)
  }
}
