/**
 * @module clients
 * Host-side client registration (ensure, find, update, delete, list) and the per-instance client
 * cache the endpoints read through. Secrets are hashed before they reach the store.
 */
import {
  type ClientRegistration,
  type ParsedClientRegistration,
  formatIssues,
  parseClientRegistration,
  withoutInputs,
} from './config.ts'
import { hashSecret, isSecretHash, verifySecret } from './secrets.ts'
import { base64url } from 'jose'
import * as v from 'valibot'
import type { ClientRecord, SecretRecord, Store } from './storage/types.ts'

const AddSecretSchema = v.strictObject({
  secret: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'), v.maxLength(1024))),
  expiresAt: v.optional(v.pipe(v.number(), v.safeInteger())),
})
const RetireSecretSchema = v.strictObject({ at: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))) })

function parseInput<S extends v.GenericSchema>(schema: S, input: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input)
  if (result.success) return result.output
  throw new TypeError(`${what}\n${formatIssues(result.issues)}`, { cause: withoutInputs(result.issues) })
}

/** A client as the host sees it: everything but the secret hashes. */
export interface ClientInfo {
  clientId: string
  displayName: string
  /** `confidential` when it holds a secret, otherwise `public`. */
  type: 'confidential' | 'public'
  permissions: string[]
  redirectUris: string[]
  postLogoutRedirectUris: string[]
  consentType: 'implicit' | 'explicit'
  allowPlainPkce: boolean
  requirePkce: boolean
  lifetimes: ClientRecord['lifetimes']
  /** CIDR ranges the client may authenticate from; absent: anywhere. */
  allowedNetworks?: string[]
  /** The secrets' ids, creation and expiry, never the secrets. */
  secrets: SecretInfo[]
  createdAt: number
  updatedAt: number
}

/** A client secret as the host sees it. */
export interface SecretInfo {
  /** Stable id of the secret (derived from its random salt), for `retireSecret`. */
  id: string
  createdAt: number
  /** After this time (epoch s) the secret no longer authenticates. */
  expiresAt?: number
}

/** A secret just added: its value is shown this once and never stored. */
export interface AddedSecret extends SecretInfo {
  secret: string
}

/** The id of a stored secret: a prefix of its random salt (unique per hash, not secret). */
export function secretId(record: SecretRecord): string {
  return record.hash.split('$')[2]?.slice(0, 16) ?? ''
}

function toSecretInfo(record: SecretRecord): SecretInfo {
  const info: SecretInfo = { id: secretId(record), createdAt: record.createdAt }
  if (record.expiresAt !== undefined) info.expiresAt = record.expiresAt
  return info
}

/** A random client secret: 32 bytes, base64url. */
export function generateSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return base64url.encode(bytes)
}

/** Whether the client authenticates with a secret. */
export function isConfidential(client: ClientRecord): boolean {
  return client.secrets.length > 0
}

/** The host-facing view of a stored client. */
export function toClientInfo(record: ClientRecord): ClientInfo {
  return {
    clientId: record.clientId,
    displayName: record.displayName,
    type: isConfidential(record) ? 'confidential' : 'public',
    permissions: [...record.permissions],
    redirectUris: [...record.redirectUris],
    postLogoutRedirectUris: [...record.postLogoutRedirectUris],
    consentType: record.consentType,
    allowPlainPkce: record.allowPlainPkce,
    requirePkce: record.requirePkce,
    lifetimes: { ...record.lifetimes },
    ...(record.allowedNetworks ? { allowedNetworks: [...record.allowedNetworks] } : {}),
    secrets: record.secrets.map(toSecretInfo),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  }
}

/** What `update` may change: any registration field; `clientSecret: null` makes the client public. */
export type ClientChanges = Partial<Omit<ClientRegistration, 'clientId' | 'clientSecret'>> & {
  clientSecret?: string | null
}

/** Whether two records register the same client (times aside). */
function sameClient(a: ClientRecord, b: ClientRecord): boolean {
  const { createdAt: _a1, updatedAt: _a2, ...left } = a
  const { createdAt: _b1, updatedAt: _b2, ...right } = b
  return JSON.stringify(canonical(left)) === JSON.stringify(canonical(right))
}

/** A JSON value with object keys sorted, for comparison. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
  )
}

/** Read-modify-writes retried on a concurrent change before `update` and rotation give up. */
const CHANGE_ATTEMPTS = 8

export interface ClientRegistryOptions {
  store: Store
  now: () => number
  iterations: number
  /** Seconds a client read by the endpoints may be served from memory. Default 5. */
  cacheTtl?: number
}

/** Creates the registry: the host API plus `get` for the endpoints. */
export function createClientRegistry(options: ClientRegistryOptions): ClientRegistry {
  const { store, now } = options
  const cacheTtl = options.cacheTtl ?? 5
  const cache = new Map<string, { record: ClientRecord | undefined; until: number }>()
  const CACHE_MAX = 10_000

  async function toRecord(registration: ClientRegistration, createdAt: number): Promise<ClientRecord> {
    const reg = parseClientRegistration(registration)
    return fromRegistration(reg, await secretsOf(reg.clientSecret), createdAt)
  }

  /** The stored secrets of a registration's secret: none, or its hash (hashed here unless it is one). */
  async function secretsOf(secret: string | undefined): Promise<SecretRecord[]> {
    if (secret === undefined) return []
    return [{ hash: isSecretHash(secret) ? secret : await hashSecret(secret, options.iterations), createdAt: now() }]
  }

  function fromRegistration(reg: ParsedClientRegistration, secrets: SecretRecord[], createdAt: number): ClientRecord {
    return {
      clientId: reg.clientId,
      secrets,
      displayName: reg.displayName ?? reg.clientId,
      permissions: reg.permissions,
      redirectUris: reg.redirectUris,
      postLogoutRedirectUris: reg.postLogoutRedirectUris,
      consentType: reg.consentType,
      allowPlainPkce: reg.allowPlainPkce,
      requirePkce: reg.requirePkce,
      lifetimes: reg.lifetimes,
      ...(reg.allowedNetworks ? { allowedNetworks: reg.allowedNetworks } : {}),
      createdAt,
      updatedAt: now(),
    }
  }

  /**
   * The stored secrets to keep for a registration's secret: the client's own when the secret
   * still verifies against a live one of them (or, pre-hashed, equals one), else undefined.
   */
  async function keptSecrets(existing: ClientRecord, secret: string | undefined): Promise<SecretRecord[] | undefined> {
    if (secret === undefined) return existing.secrets.length === 0 ? existing.secrets : undefined
    const at = now()
    for (const record of existing.secrets) {
      if (record.expiresAt !== undefined && record.expiresAt <= at) continue
      if (isSecretHash(secret) ? secret === record.hash : await verifySecret(secret, record.hash))
        return existing.secrets
    }
    return undefined
  }

  /** Reads a client from the store into the cache (an unknown id is remembered too). */
  async function fetchClient(clientId: string, at: number): Promise<ClientRecord | undefined> {
    const record = await store.clients.get(clientId)
    if (cache.size >= CACHE_MAX) cache.clear()
    if (cacheTtl > 0) cache.set(clientId, { record, until: at + cacheTtl })
    return record
  }

  async function load(clientId: string): Promise<ClientRecord> {
    const existing = await store.clients.get(clientId)
    if (!existing) throw new TypeError(`client ${JSON.stringify(clientId)} does not exist`)
    return existing
  }

  /** The record `changes` make of `existing` (the host's `update`). */
  async function merge(existing: ClientRecord, changes: ClientChanges): Promise<ClientRecord> {
    const merged: Record<string, unknown> = {
      clientId: existing.clientId,
      displayName: existing.displayName,
      permissions: existing.permissions,
      redirectUris: existing.redirectUris,
      postLogoutRedirectUris: existing.postLogoutRedirectUris,
      consentType: existing.consentType,
      allowPlainPkce: existing.allowPlainPkce,
      requirePkce: existing.requirePkce,
      lifetimes: existing.lifetimes,
      allowedNetworks: existing.allowedNetworks,
    }
    for (const [name, value] of Object.entries(changes)) {
      // The id is the key: an untyped caller's `clientId` in changes must not retarget the update.
      if (name !== 'clientId' && value !== undefined) merged[name] = value
    }
    const keepSecrets = changes.clientSecret === undefined
    if (keepSecrets && existing.secrets.length > 0) merged.clientSecret = existing.secrets[0]?.hash
    if (changes.clientSecret === null) delete merged.clientSecret
    const record = await toRecord(merged as unknown as ClientRegistration, existing.createdAt)
    if (keepSecrets) record.secrets = existing.secrets
    return record
  }

  /**
   * Read-modify-write of one client as a compare-and-set: `change` sees the stored record and
   * returns its successor (or `existing` itself: no write), written only if nobody changed the
   * record meanwhile (another call, another instance); otherwise it runs again on the fresh
   * record. Nothing is lost to a race.
   */
  async function change(
    clientId: string,
    next: (existing: ClientRecord) => Promise<ClientRecord> | ClientRecord,
  ): Promise<ClientRecord> {
    for (let attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
      const existing = await load(clientId)
      const record = await next(existing)
      if (record === existing) return existing // nothing to change
      if (await store.clients.update(record, existing)) {
        cache.delete(clientId)
        return record
      }
    }
    throw new Error(`client ${JSON.stringify(clientId)} kept changing during the update; try again`)
  }

  return {
    get(clientId: string): ClientRecord | undefined | Promise<ClientRecord | undefined> {
      const at = now()
      const hit = cache.get(clientId)
      if (hit && hit.until > at) return hit.record
      return fetchClient(clientId, at)
    },

    async ensure(registration: ClientRegistration): Promise<{ created: boolean; client: ClientInfo }> {
      const existing = await store.clients.get(String((registration as { clientId?: unknown }).clientId))
      if (existing) {
        parseClientRegistration(registration)
        return { created: false, client: toClientInfo(existing) }
      }
      const record = await toRecord(registration, now())
      const created = await store.clients.insert(record)
      cache.delete(record.clientId)
      const stored = created ? record : await store.clients.get(record.clientId)
      return { created, client: toClientInfo(stored ?? record) }
    },

    async sync(
      registration: ClientRegistration,
    ): Promise<{ status: 'created' | 'updated' | 'unchanged'; client: ClientInfo }> {
      const reg = parseClientRegistration(registration)
      if (!(await store.clients.get(reg.clientId))) {
        const record = fromRegistration(reg, await secretsOf(reg.clientSecret), now())
        if (await store.clients.insert(record)) {
          cache.delete(reg.clientId)
          return { status: 'created', client: toClientInfo(record) }
        }
      }
      let status: 'updated' | 'unchanged' = 'unchanged'
      let replacement: SecretRecord[] | undefined
      const record = await change(reg.clientId, async (existing) => {
        // Hashed once, even when a concurrent change makes this run again.
        let secrets = await keptSecrets(existing, reg.clientSecret)
        if (!secrets) {
          replacement ??= await secretsOf(reg.clientSecret)
          secrets = replacement
        }
        const next = fromRegistration(reg, secrets, existing.createdAt)
        if (sameClient(next, existing)) {
          status = 'unchanged'
          return existing
        }
        status = 'updated'
        return next
      })
      return { status, client: toClientInfo(record) }
    },

    async find(clientId: string): Promise<ClientInfo | undefined> {
      const record = await store.clients.get(clientId)
      return record && toClientInfo(record)
    },

    async list(): Promise<ClientInfo[]> {
      return (await store.clients.list()).map(toClientInfo)
    },

    async update(clientId: string, changes: ClientChanges): Promise<ClientInfo> {
      const record = await change(clientId, (existing) => merge(existing, changes))
      return toClientInfo(record)
    },
    async addSecret(clientId: string, input: { secret?: string; expiresAt?: number } = {}): Promise<AddedSecret> {
      const parsed = parseInput(AddSecretSchema, input, 'invalid secret')
      const isPublic = (client: ClientRecord) => {
        if (client.secrets.length === 0) {
          throw new TypeError(`client ${JSON.stringify(clientId)} is public: it has no secrets to rotate`)
        }
      }
      isPublic(await load(clientId))
      const at = now()
      if (parsed.expiresAt !== undefined && parsed.expiresAt <= at) {
        throw new TypeError('invalid secret\nexpiresAt: must be in the future')
      }
      const secret = parsed.secret ?? generateSecret()
      const record: SecretRecord = { hash: await hashSecret(secret, options.iterations), createdAt: at }
      if (parsed.expiresAt !== undefined) record.expiresAt = parsed.expiresAt
      await change(clientId, (existing) => {
        isPublic(existing)
        return { ...existing, secrets: [...existing.secrets, record], updatedAt: now() }
      })
      return { ...toSecretInfo(record), secret }
    },

    async retireSecret(clientId: string, id: string, input: { at?: number } = {}): Promise<ClientInfo> {
      const at = parseInput(RetireSecretSchema, input, 'invalid secret retirement').at ?? now()
      const record = await change(clientId, (existing) => {
        const current = now()
        const target = existing.secrets.find((secret) => secretId(secret) === id)
        if (!target) throw new TypeError(`client ${JSON.stringify(clientId)} has no secret ${JSON.stringify(id)}`)
        const retired = { ...target, expiresAt: Math.min(at, target.expiresAt ?? at) }
        const secrets = existing.secrets
          .map((secret) => (secret === target ? retired : secret))
          .filter((secret) => secret.expiresAt === undefined || secret.expiresAt > current - 86_400)
        // Another secret must outlive the retirement, or the client would be locked out at `at`.
        const after = Math.max(at, current)
        if (!secrets.some((s) => s !== retired && (s.expiresAt === undefined || s.expiresAt > after))) {
          throw new TypeError('cannot retire the last valid secret: add its successor first')
        }
        return { ...existing, secrets, updatedAt: current }
      })
      return toClientInfo(record)
    },

    async delete(clientId: string): Promise<boolean> {
      cache.delete(clientId)
      return store.clients.delete(clientId)
    },
  }
}

/** The host's client API (`service.clients`). */
export interface ClientRegistry {
  /**
   * The client for an endpoint; served from a short per-instance cache (synchronously on a hit,
   * so a busy client's requests do not wait a turn for it).
   */
  get(clientId: string): ClientRecord | undefined | Promise<ClientRecord | undefined>
  /**
   * Registers a client unless one with this id exists (then the registration is skipped).
   * @example
   * await service.clients.ensure({ clientId: 'job', clientSecret: 's3cret', permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'] })
   */
  ensure(registration: ClientRegistration): Promise<{ created: boolean; client: ClientInfo }>
  /**
   * Makes the stored client exactly what `registration` says (the configuration file's
   * semantics, where the file is the source of truth): creates it when missing; otherwise every
   * field becomes the registration's (a field left out returns to its default, as for a new
   * registration). The secret: while the registration's secret still verifies against a live
   * stored one (a pre-hashed secret: equals one), the stored secrets stay as they are, so a
   * restart costs no rehash and secrets added with `addSecret` survive; otherwise they are all
   * replaced by the registration's (a rotated-out secret stops working at once), and no secret
   * makes the client public. `createdAt` is kept; `updatedAt` moves only when something changed.
   * `ensure` keeps its skip-if-exists meaning.
   * @example
   * for (const client of file.clients) console.log((await service.clients.sync(client)).status)
   */
  sync(registration: ClientRegistration): Promise<{ status: 'created' | 'updated' | 'unchanged'; client: ClientInfo }>
  /** The client with this id, or undefined. */
  find(clientId: string): Promise<ClientInfo | undefined>
  /** Every client. */
  list(): Promise<ClientInfo[]>
  /**
   * Updates a client. Fields left out keep their value; a `clientSecret` replaces every secret,
   * `clientSecret: null` makes the client public.
   */
  update(clientId: string, changes: ClientChanges): Promise<ClientInfo>
  /**
   * Adds a secret to a confidential client, next to the ones it has, so callers can move to it
   * before the old one is retired (rotation without downtime). Without `secret`, a random
   * 256-bit one is generated. The value is returned this once; only its hash is stored.
   * @example
   * const next = await service.clients.addSecret('reporting-job', { expiresAt: now + 90 * 86400 })
   * // deploy next.secret to the job, then:
   * await service.clients.retireSecret('reporting-job', oldId)
   */
  addSecret(clientId: string, input?: { secret?: string; expiresAt?: number }): Promise<AddedSecret>
  /**
   * Retires a secret: it stops authenticating at `at` (default now; a later time leaves a grace
   * period). Secrets expired for more than a day are dropped from the record. The last
   * unexpired secret cannot be retired (add its successor first).
   */
  retireSecret(clientId: string, id: string, input?: { at?: number }): Promise<ClientInfo>
  /** Deletes a client. Returns whether it existed. */
  delete(clientId: string): Promise<boolean>
}
