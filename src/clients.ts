/**
 * @module clients
 * Host-side client registration (ensure, find, update, delete, list) and the per-instance client
 * cache the endpoints read through. Secrets are hashed before they reach the store.
 */
import { type ClientRegistration, parseClientRegistration } from './config.ts'
import { hashSecret, isSecretHash } from './secrets.ts'
import type { ClientRecord, Store } from './storage/types.ts'

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
  /** Number of secrets and their expiry, never the secrets. */
  secrets: Array<{ createdAt: number; expiresAt?: number }>
  createdAt: number
  updatedAt: number
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
    secrets: record.secrets.map(({ createdAt, expiresAt }) =>
      expiresAt === undefined ? { createdAt } : { createdAt, expiresAt },
    ),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  }
}

export interface ClientRegistryOptions {
  store: Store
  now: () => number
  iterations: number
  /** Seconds a client read by the endpoints may be served from memory. Default 5. */
  cacheTtl?: number
}

/** Creates the registry: the host API plus `get` for the endpoints. */
export function createClientRegistry(options: ClientRegistryOptions) {
  const { store, now } = options
  const cacheTtl = options.cacheTtl ?? 5
  const cache = new Map<string, { record: ClientRecord | undefined; until: number }>()
  const CACHE_MAX = 10_000

  async function toRecord(registration: ClientRegistration, createdAt: number): Promise<ClientRecord> {
    const reg = parseClientRegistration(registration)
    const at = now()
    const secrets =
      reg.clientSecret === undefined
        ? []
        : [
            {
              hash: isSecretHash(reg.clientSecret)
                ? reg.clientSecret
                : await hashSecret(reg.clientSecret, options.iterations),
              createdAt: at,
            },
          ]
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
      createdAt,
      updatedAt: at,
    }
  }

  return {
    /** The client for an endpoint; served from a short per-instance cache. */
    async get(clientId: string): Promise<ClientRecord | undefined> {
      const at = now()
      const hit = cache.get(clientId)
      if (hit && hit.until > at) return hit.record
      const record = await store.clients.get(clientId)
      if (cache.size >= CACHE_MAX) cache.clear()
      if (cacheTtl > 0) cache.set(clientId, { record, until: at + cacheTtl })
      return record
    },

    /**
     * Registers a client unless one with this id exists (then the registration is skipped).
     * @example
     * await service.clients.ensure({ clientId: 'job', clientSecret: 's3cret', permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'] })
     */
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

    /** The client with this id, or undefined. */
    async find(clientId: string): Promise<ClientInfo | undefined> {
      const record = await store.clients.get(clientId)
      return record && toClientInfo(record)
    },

    /** Every client. */
    async list(): Promise<ClientInfo[]> {
      return (await store.clients.list()).map(toClientInfo)
    },

    /**
     * Updates a client. Fields left out keep their value; a `clientSecret` replaces every secret,
     * `clientSecret: null` makes the client public.
     */
    async update(
      clientId: string,
      changes: Partial<Omit<ClientRegistration, 'clientId' | 'clientSecret'>> & { clientSecret?: string | null },
    ): Promise<ClientInfo> {
      const existing = await store.clients.get(clientId)
      if (!existing) throw new TypeError(`client ${JSON.stringify(clientId)} does not exist`)
      const merged: Record<string, unknown> = {
        clientId,
        displayName: existing.displayName,
        permissions: existing.permissions,
        redirectUris: existing.redirectUris,
        postLogoutRedirectUris: existing.postLogoutRedirectUris,
        consentType: existing.consentType,
        allowPlainPkce: existing.allowPlainPkce,
        requirePkce: existing.requirePkce,
        lifetimes: existing.lifetimes,
      }
      for (const [name, value] of Object.entries(changes)) {
        // The id is the key: an untyped caller's `clientId` in changes must not retarget the update.
        if (name !== 'clientId' && value !== undefined) merged[name] = value
      }
      const keepSecrets = changes.clientSecret === undefined
      if (keepSecrets && existing.secrets.length > 0) merged.clientSecret = existing.secrets[0]?.hash
      if (changes.clientSecret === null) delete merged.clientSecret
      const record = await toRecord(merged as ClientRegistration, existing.createdAt)
      if (keepSecrets) record.secrets = existing.secrets
      if (!(await store.clients.update(record)))
        throw new TypeError(`client ${JSON.stringify(clientId)} does not exist`)
      cache.delete(clientId)
      return toClientInfo(record)
    },

    /** Deletes a client. Returns whether it existed. */
    async delete(clientId: string): Promise<boolean> {
      cache.delete(clientId)
      return store.clients.delete(clientId)
    },
  }
}

export type ClientRegistry = ReturnType<typeof createClientRegistry>
