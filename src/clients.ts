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
import { type MetadataDocumentResolver, isClientIdUrl } from './client_id_metadata_document.ts'
import { hashSecret, isSecretHash, verifySecret } from './secrets.ts'
import { base64url } from 'jose'
import * as v from 'valibot'
import type { ClientRecord, SecretRecord, Store } from './storage/types.ts'
import type { SelfRegisteredNotice } from './pages.ts'

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
  /** Set when the client registered itself (RFC 7591, or a client id metadata document). */
  registration?: {
    kind: 'dynamic' | 'metadata_document'
    /** Last token request (epoch s), recorded at most once a day. */
    lastUsedAt?: number
    /** URL of the client's metadata document (metadata-document clients). */
    documentUrl?: string
  }
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

/**
 * Whether the client registered itself (RFC 7591, or a client id metadata document) rather than
 * being configured by the host: such a client always gets the consent page (it is never implicit,
 * and no earlier consent in the session skips it), which says that the client registered itself.
 */
export function isSelfRegistered(client: ClientRecord): boolean {
  return client.registration !== undefined
}

/** What the consent page shows about a self-registered client for a redirect URI (undefined for the host's clients). */
export function selfRegistrationNotice(client: ClientRecord, redirectUri: string): SelfRegisteredNotice | undefined {
  const registration = client.registration
  if (registration === undefined) return undefined
  const notice: SelfRegisteredNotice = { kind: registration.kind, redirectHost: hostOf(redirectUri) }
  if (registration.kind === 'metadata_document')
    notice.documentHost = hostOf(registration.documentUrl ?? client.clientId)
  return notice
}

/** The host of a URL, or its scheme for a private-use scheme URI without one (`com.example.app:`). */
function hostOf(url: string): string {
  try {
    const parsed = new URL(url)
    return parsed.host === '' ? parsed.protocol : parsed.host
  } catch {
    return url
  }
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
    ...(record.registration
      ? {
          registration: {
            kind: record.registration.kind,
            ...(record.registration.lastUsedAt !== undefined ? { lastUsedAt: record.registration.lastUsedAt } : {}),
            ...(record.registration.documentUrl !== undefined ? { documentUrl: record.registration.documentUrl } : {}),
          },
        }
      : {}),
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
  /** Default `unusedFor` of `pruneDynamic`, seconds. Default 30 days. */
  pruneUnusedAfter?: number
  /**
   * Client ID Metadata Documents: a client id that is an https URL with a path and no stored
   * client resolves through its document (see `src/client_id_metadata_document.ts`).
   */
  documents?: MetadataDocumentResolver
}

/** How often, at most, a self-registered client's `lastUsedAt` is written (seconds). */
const LAST_USED_GRANULARITY = 86_400

/** Creates the registry: the host API plus `get` for the endpoints. */
export function createClientRegistry(options: ClientRegistryOptions): ClientRegistry {
  const { store, now } = options
  const cacheTtl = options.cacheTtl ?? 5
  const cache = new Map<string, { record: ClientRecord | undefined; until: number }>()
  const CACHE_MAX = 10_000
  /** When this instance last wrote `lastUsedAt` per client id (so a busy client costs one write a day). */
  const touched = new Map<string, number>()

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

  const documents = options.documents
  /** A stored client comes first; then a client id URL is its metadata document's client (throws invalid_client when unusable). */
  function fromDocument(clientId: string): Promise<ClientRecord> | undefined {
    return documents && isClientIdUrl(clientId) ? documents.resolve(clientId) : undefined
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
    if (existing.registration) record.registration = existing.registration
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
      if (hit && hit.until > at) return hit.record ?? fromDocument(clientId)
      const loading = fetchClient(clientId, at)
      return documents && isClientIdUrl(clientId) ? loading.then((record) => record ?? fromDocument(clientId)) : loading
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

    forget(clientId: string): void {
      cache.delete(clientId)
    },

    touch(client: ClientRecord): void {
      const registration = client.registration
      // Only stored (dynamic) clients: a metadata-document client may not be a stored record.
      if (registration?.kind !== 'dynamic') return
      const at = now()
      const last = Math.max(registration.lastUsedAt ?? client.createdAt, touched.get(client.clientId) ?? 0)
      if (at - last < LAST_USED_GRANULARITY) return
      if (touched.size >= CACHE_MAX) touched.clear()
      touched.set(client.clientId, at)
      // Not awaited: the request does not wait for bookkeeping. A concurrent change wins (no retry).
      const next: ClientRecord = { ...client, registration: { ...registration, lastUsedAt: at } }
      store.clients.update(next, client).then(
        (written) => {
          if (written) cache.delete(client.clientId)
        },
        () => touched.delete(client.clientId),
      )
    },

    async pruneDynamic(input: { unusedFor?: number } = {}): Promise<string[]> {
      const unusedFor = input.unusedFor ?? options.pruneUnusedAfter ?? 2_592_000
      if (!Number.isSafeInteger(unusedFor) || unusedFor < 0) {
        throw new TypeError('unusedFor must be a non-negative integer (seconds)')
      }
      const cutoff = now() - unusedFor
      const removed: string[] = []
      for (const record of await store.clients.list()) {
        const registration = record.registration
        if (registration?.kind !== 'dynamic') continue
        if (Math.max(registration.lastUsedAt ?? record.createdAt, touched.get(record.clientId) ?? 0) > cutoff) continue
        cache.delete(record.clientId)
        if (await store.clients.delete(record.clientId)) removed.push(record.clientId)
      }
      return removed
    },
  }
}

/** The host's client API (`service.clients`). */
export interface ClientRegistry {
  /**
   * The client for an endpoint; served from a short per-instance cache (synchronously on a hit,
   * so a busy client's requests do not wait a turn for it). With Client ID Metadata Documents on,
   * an https URL id that is not stored resolves through its document, and an unusable document
   * rejects with `invalid_client`.
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
  /**
   * Deletes the dynamically registered clients (RFC 7591) whose last token request is more than
   * `unusedFor` seconds ago (default: the `pruneUnusedAfter` option, 30 days), or that never made
   * one within that time of registering. Last use is recorded at most once a day, so the cut-off
   * is a day coarse. Returns the deleted client ids.
   * @example
   * const removed = await service.clients.pruneDynamic({ unusedFor: 7 * 86400 })
   */
  pruneDynamic(input?: { unusedFor?: number }): Promise<string[]>
  /** Drops the client from this instance's cache (after a change the registry did not make). */
  forget(clientId: string): void
  /**
   * Records that a dynamically registered client was used (the token endpoint calls it): written
   * at most once a day per client, in the background, for `pruneDynamic`. No-op for other clients.
   */
  touch(client: ClientRecord): void
}
