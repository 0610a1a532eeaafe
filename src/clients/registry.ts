/**
 * @module clients/registry
 * The host's client API (`service.clients`: ensure, sync, find, update, secrets, delete, list) and
 * the per-instance client cache the endpoints read through. The pieces: src/clients/record.ts (what
 * a record says, the host's view), src/clients/secrets.ts (hashing, rotation), src/clients/updates.ts
 * (the writes), src/clients/cache.ts and src/clients/dynamic_usage.ts (last use, pruning).
 */
import type { SigningAlgorithm } from '../crypto/index.ts'
import { createClientCache } from './cache.ts'
import { type MetadataDocumentResolver, isClientIdUrl } from './metadata_document.ts'
import { type AddedSecret, type ClientInfo, toClientInfo } from './record.ts'
import {
  type ClientChanges,
  type ClientWrites,
  addClientSecret,
  ensureClient,
  rehashClientSecret,
  retireClientSecret,
  syncClient,
  updateClient,
} from './updates.ts'
import { createDynamicClientUsage } from './dynamic_usage.ts'
import type { ClientRegistration } from './registration.ts'
import type { ClientRecord, Store } from '../storage/index.ts'

export interface ClientRegistryOptions {
  store: Store
  now: () => number
  iterations: number
  /** The most PBKDF2 iterations this platform computes (`secretHashMaxIterations`). */
  maxIterations?: number
  /** The algs the service signs with (a registration's `idTokenSignedResponseAlg` must be one). */
  algorithms?: readonly SigningAlgorithm[]
  /** Seconds a client read by the endpoints may be served from memory. Default 5. */
  cacheTtl?: number
  /** Default `unusedFor` of `pruneDynamic`, seconds. Default 30 days. */
  pruneUnusedAfter?: number
  /** Where background writes go (the `waitUntil` option). */
  waitUntil?: (promise: Promise<unknown>) => void
  /**
   * Client ID Metadata Documents: a client id that is an https URL with a path and no stored
   * client resolves through its document (see `src/clients/metadata_document.ts`).
   */
  documents?: MetadataDocumentResolver
}

/** Creates the registry: the host API plus `get` for the endpoints. */
export function createClientRegistry(options: ClientRegistryOptions): ClientRegistry {
  const { store, now, documents } = options
  const cache = createClientCache(options.cacheTtl ?? 5)
  const writes: ClientWrites = {
    store,
    now,
    iterations: options.iterations,
    ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {}),
    cache,
    ...(options.algorithms ? { algorithms: options.algorithms } : {}),
  }
  const usage = createDynamicClientUsage({
    store,
    now,
    cache,
    pruneUnusedAfter: options.pruneUnusedAfter,
    waitUntil: options.waitUntil,
  })

  /** A stored client comes first; then a client id URL is its metadata document's client (throws invalid_client when unusable). */
  function fromDocument(clientId: string, address: string | undefined): Promise<ClientRecord> | undefined {
    return documents && isClientIdUrl(clientId) ? documents.resolve(clientId, address) : undefined
  }

  /** Reads a client from the store into the cache (an unknown id is remembered too). */
  async function fetchClient(clientId: string, at: number): Promise<ClientRecord | undefined> {
    const record = await store.clients.get(clientId)
    cache.remember(clientId, record, at)
    return record
  }

  return {
    get(clientId: string, address?: string): ClientRecord | undefined | Promise<ClientRecord | undefined> {
      const at = now()
      const hit = cache.lookup(clientId, at)
      if (hit) return hit.record ?? fromDocument(clientId, address)
      const loading = fetchClient(clientId, at)
      return documents && isClientIdUrl(clientId)
        ? loading.then((record) => record ?? fromDocument(clientId, address))
        : loading
    },
    ensure: (registration) => ensureClient(writes, registration),
    sync: (registration) => syncClient(writes, registration),
    async find(clientId: string): Promise<ClientInfo | undefined> {
      const record = await store.clients.get(clientId)
      return record && toClientInfo(record)
    },
    async list(): Promise<ClientInfo[]> {
      return (await store.clients.list()).map(toClientInfo)
    },
    update: (clientId, changes) => updateClient(writes, clientId, changes),
    addSecret: (clientId, input = {}) => addClientSecret(writes, clientId, input),
    retireSecret: (clientId, id, input = {}) => retireClientSecret(writes, clientId, id, input),
    async delete(clientId: string): Promise<boolean> {
      cache.delete(clientId)
      return store.clients.delete(clientId)
    },
    forget(clientId: string): void {
      cache.delete(clientId)
    },
    touch: (client) => usage.touch(client),
    rehashSecret: (clientId, stored, secret) => rehashClientSecret(writes, clientId, stored, secret),
    pruneDynamic: (input = {}) => usage.prune(input),
  }
}

/** The host's client API (`service.clients`). */
export interface ClientRegistry {
  /**
   * The client for an endpoint; served from a short per-instance cache (synchronously on a hit,
   * so a busy client's requests do not wait a turn for it). With Client ID Metadata Documents on,
   * an https URL id that is not stored resolves through its document, and an unusable document
   * rejects with `invalid_client`. `address` is the request's source address: a document fetch
   * for an unknown URL counts against it.
   */
  get(clientId: string, address?: string): ClientRecord | undefined | Promise<ClientRecord | undefined>
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
  /**
   * Replaces the stored hash `stored` of a client's secret, just verified with `secret`, by its
   * hash with the configured iteration count (same salt, so the secret's id stays): a
   * compare-and-set, a no-op when that hash is gone meanwhile. The client authentication calls it
   * when the stored count differs from the configured one. Resolves whether it wrote.
   */
  rehashSecret(clientId: string, stored: string, secret: string): Promise<boolean>
}
