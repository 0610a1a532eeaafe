/**
 * @module keys/keyring
 * Signing keys: generated on first start when none are configured, kept in the store so that every
 * instance signs with the same key, and projected into the public JWKS (RFC 7517).
 *
 * Selection is deterministic: for each algorithm the active key with the earliest `activatesAt`
 * (then `kid`) that has not retired signs. Two instances that both generate a key on an empty store
 * therefore converge on the same one after their next reload.
 */
import { type CryptoKey, type JWK, compactVerify, exportJWK, generateKeyPair, importJWK } from 'jose'
import {
  headerSegment,
  type JwsSigner,
  randomToken,
  signCompact,
  type SignFunction,
  type SigningAlgorithm as SigningAlg,
} from '../crypto/index.ts'
import type { KeyRecord, Store } from '../storage/index.ts'

/** A key ready to sign. */
export interface SigningKey {
  kid: string
  alg: SigningAlg
  key: CryptoKey
  /** The injected synchronous signature function for this key (`signer` option), if any. */
  sign?: SignFunction
}

export interface KeyringOptions {
  store: Store
  now: () => number
  /** Algorithms that must always have an active key. */
  algorithms: readonly SigningAlg[]
  /** Keys given in options; when set, nothing is generated or stored. */
  configured?: Array<Record<string, unknown>>
  /** Seconds a loaded key set is trusted before it is read from the store again. Default 60. */
  cacheTtl?: number
  /** Rotate a key automatically once it has signed for this many seconds. Default: never. */
  rotationInterval?: number
  /** Seconds a new key is published before it signs (clients cache JWKS). Default 300. */
  publishAhead?: number
  /** Seconds a retired key stays published (longer than any token it signed lives). Default 1 day. */
  retainFor?: number
  /** Called with the new keys after every rotation (on request or automatic). */
  onRotated?: (created: KeyRecord[]) => void
  /** Supplies a synchronous signature function per key (see `JwsSigner`); default: jose only. */
  signer?: JwsSigner
}

const PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'])

/** The public half of a private JWK: every private member removed. */
export function publicJwk(jwk: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(jwk).filter(([name]) => !PRIVATE_MEMBERS.has(name)))
}

/** Generates a new key record for `alg` that activates at `activatesAt`. */
export async function generateKeyRecord(alg: SigningAlg, now: number, activatesAt = now): Promise<KeyRecord> {
  const options =
    alg === 'RS256' || alg === 'PS256' ? { extractable: true, modulusLength: 2048 } : { extractable: true }
  const { privateKey } = await generateKeyPair(alg, options)
  const kid = randomToken(16)
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' }
  return { kid, alg, privateJwk, publicJwk: publicJwk(privateJwk), createdAt: now, activatesAt }
}

function isPublished(record: KeyRecord, now: number): boolean {
  return record.expiresAt === undefined || record.expiresAt > now
}

function canSign(record: KeyRecord, now: number): boolean {
  return record.activatesAt <= now && (record.retiresAt === undefined || record.retiresAt > now)
}

/** Creates the keyring. */
export function createKeyring(options: KeyringOptions) {
  const cacheTtl = options.cacheTtl ?? 60
  const imported = new Map<string, Promise<CryptoKey>>()
  const signers = new Map<string, Promise<SignFunction | undefined>>()
  const signingKeys = new Map<string, Promise<SigningKey>>()
  /** The settled entries of `signingKeys`: what a request's signing key usually comes from. */
  const readyKeys = new Map<string, SigningKey>()
  let loaded: { records: KeyRecord[]; loadedAt: number } | undefined
  let loading: Promise<KeyRecord[]> | undefined
  /** Whether the last load generated keys, and the one before the next reload is due sooner. */
  let converging = false
  let generated = false

  function importKey(record: KeyRecord, which: 'private' | 'public'): Promise<CryptoKey> {
    const id = `${which}:${record.kid}`
    let key = imported.get(id)
    if (!key) {
      const jwk = (which === 'private' ? record.privateJwk : record.publicJwk) as JWK
      key = importJWK(jwk, record.alg) as Promise<CryptoKey>
      imported.set(id, key)
    }
    return key
  }

  /**
   * The injected signature function for a key, asked for once per kid. Its first signature is
   * checked against the public key, so a wrong one (e.g. DER-encoded ECDSA) fails here, loudly,
   * instead of in every client.
   */
  function signerFor(record: KeyRecord): Promise<SignFunction | undefined> {
    let found = signers.get(record.kid)
    if (!found) {
      found = (async () => {
        const sign = options.signer?.({ alg: record.alg, kid: record.kid, privateJwk: record.privateJwk })
        if (sign === undefined) return undefined
        if (typeof sign !== 'function') throw new TypeError(`signer: not a function for key ${record.kid}`)
        const probe = signCompact(headerSegment({ alg: record.alg, kid: record.kid }), { probe: record.kid }, sign)
        try {
          await compactVerify(await probe, await importKey(record, 'public'), { algorithms: [record.alg] })
        } catch (cause) {
          throw new Error(`signer: the signature for key ${record.kid} (${record.alg}) does not verify`, { cause })
        }
        return sign
      })()
      signers.set(record.kid, found)
    }
    return found
  }

  /** One SigningKey object per kid for the key's life (compact_jws caches its encoded headers on it). */
  function signingKeyOf(record: KeyRecord): Promise<SigningKey> {
    let found = signingKeys.get(record.kid)
    if (!found) {
      found = (async (): Promise<SigningKey> => {
        const key = await importKey(record, 'private')
        const sign = options.signer ? await signerFor(record) : undefined
        const alg = record.alg as SigningAlg
        return sign ? { kid: record.kid, alg, key, sign } : { kid: record.kid, alg, key }
      })()
      // A failed import or signer check is not remembered here: signerFor remembers its own outcome.
      found.then(
        (key) => readyKeys.set(record.kid, key),
        () => signingKeys.delete(record.kid),
      )
      signingKeys.set(record.kid, found)
    }
    return found
  }

  async function loadFromStore(): Promise<KeyRecord[]> {
    const now = options.now()
    generated = false
    if (options.configured) {
      return options.configured.map((jwk) => ({
        kid: String(jwk.kid),
        alg: String(jwk.alg),
        privateJwk: jwk,
        publicJwk: { ...publicJwk(jwk), use: 'sig' },
        createdAt: 0,
        activatesAt: 0,
      }))
    }
    let records = await options.store.keys.list()
    const missing = options.algorithms.filter((alg) => !records.some((r) => r.alg === alg && canSign(r, now)))
    if (missing.length > 0) {
      for (const alg of new Set(missing)) await options.store.keys.put(await generateKeyRecord(alg, now))
      records = await options.store.keys.list()
      // Another instance may have generated at the same moment: look again soon, so that every
      // instance converges on the same (deterministically chosen) key within a few seconds.
      generated = true
    }
    if (options.rotationInterval !== undefined) {
      const due = options.algorithms.filter((alg) => {
        const newest = records.filter((r) => r.alg === alg).sort((a, b) => b.activatesAt - a.activatesAt)[0]
        return (
          newest !== undefined &&
          newest.activatesAt <= now &&
          now - newest.activatesAt >= (options.rotationInterval as number)
        )
      })
      if (due.length > 0) {
        await rotateKeys(records, new Set(due), now)
        records = await options.store.keys.list()
      }
    }
    return records
  }

  /** Publishes a new key per algorithm, signing from `now + publishAhead`; retires the current ones then. */
  async function rotateKeys(current: KeyRecord[], algs: Set<SigningAlg>, now: number): Promise<KeyRecord[]> {
    const activatesAt = now + (options.publishAhead ?? 300)
    const created: KeyRecord[] = []
    for (const alg of algs) {
      for (const record of current) {
        if (record.alg !== alg || (record.retiresAt !== undefined && record.retiresAt <= activatesAt)) continue
        await options.store.keys.put({
          ...record,
          retiresAt: activatesAt,
          expiresAt: activatesAt + (options.retainFor ?? 86_400),
        })
      }
      const next = await generateKeyRecord(alg, now, activatesAt)
      await options.store.keys.put(next)
      created.push(next)
    }
    options.onRotated?.(created)
    return created
  }

  /** The records loaded less than the cache lifetime ago, if any. */
  function freshRecords(now: number): KeyRecord[] | undefined {
    const ttl = converging ? Math.min(2, cacheTtl) : cacheTtl
    return loaded && now - loaded.loadedAt < ttl ? loaded.records : undefined
  }

  async function records(force = false): Promise<KeyRecord[]> {
    const fresh = force ? undefined : freshRecords(options.now())
    if (fresh) return fresh
    if (!loading) {
      loading = loadFromStore()
        .then((list) => {
          converging = generated
          loaded = { records: list, loadedAt: options.now() }
          return list
        })
        .finally(() => {
          loading = undefined
        })
    }
    return loading
  }

  async function loadSigningKey(alg: SigningAlg): Promise<SigningKey> {
    // The time after each load, not the request's: a load that generated the first keys may have
    // read a later second (a GC pause at a second boundary), and its keys activate at that second.
    let record = pick(await records(), alg, options.now())
    if (!record) record = pick(await records(true), alg, options.now())
    if (!record) throw new Error(`no signing key for ${alg}`)
    return signingKeyOf(record)
  }

  return {
    /**
     * The key that signs with `alg` now: synchronously while the records are fresh and the key
     * is ready (every request but the first few after a load), else once loaded.
     */
    signingKey(alg: SigningAlg): SigningKey | Promise<SigningKey> {
      const now = options.now()
      const list = freshRecords(now)
      const record = list && pick(list, alg, now)
      return (record && readyKeys.get(record.kid)) ?? loadSigningKey(alg)
    },

    /** The public key with this `kid`, reloading once when it is unknown (another instance rotated). */
    async verificationKey(kid: string | undefined): Promise<{ key: CryptoKey; alg: string } | undefined> {
      if (kid === undefined) return undefined
      const now = options.now()
      let record = (await records()).find((r) => r.kid === kid && isPublished(r, now))
      if (!record && loaded && now - loaded.loadedAt >= 1) {
        record = (await records(true)).find((r) => r.kid === kid && isPublished(r, now))
      }
      if (!record) return undefined
      return { key: await importKey(record, 'public'), alg: record.alg }
    },

    /** The public JWK set (RFC 7517 §5): published keys, no private members. */
    async jwks(): Promise<{ keys: Record<string, unknown>[] }> {
      const now = options.now()
      const list = (await records()).filter((r) => isPublished(r, now))
      list.sort((a, b) => a.activatesAt - b.activatesAt || a.kid.localeCompare(b.kid))
      return { keys: list.map((r) => ({ ...publicJwk(r.publicJwk), kid: r.kid, alg: r.alg, use: 'sig' })) }
    },

    /** Every key record, for host-side key management. */
    async list(): Promise<KeyRecord[]> {
      return records(true)
    },

    /**
     * Rotates now: a new key per algorithm is published at once and signs after `publishAhead`
     * seconds; the keys it replaces retire then and stay published for `retainFor` seconds more.
     */
    async rotate(algs: readonly SigningAlg[] = options.algorithms): Promise<KeyRecord[]> {
      if (options.configured) throw new TypeError('keys given in options are rotated by changing the options')
      const created = await rotateKeys(await options.store.keys.list(), new Set(algs), options.now())
      loaded = undefined
      return created
    },
  }
}

function pick(list: KeyRecord[], alg: string, now: number): KeyRecord | undefined {
  let best: KeyRecord | undefined
  for (const record of list) {
    if (record.alg !== alg || !canSign(record, now)) continue
    if (
      !best ||
      record.activatesAt < best.activatesAt ||
      (record.activatesAt === best.activatesAt && record.kid < best.kid)
    ) {
      best = record
    }
  }
  return best
}

export type Keyring = ReturnType<typeof createKeyring>
