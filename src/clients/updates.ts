/**
 * @module clients/updates
 * The host's writes to client registrations (ensure, sync, update, addSecret, retireSecret): a
 * registration is validated and its secret hashed into a record, and every read-modify-write is a
 * compare-and-set retried on a concurrent change (another call, another instance), so nothing is
 * lost to a race. A write drops the client from this instance's cache.
 */
import type { ClientCache } from './cache.ts'
import { type AddedSecret, type ClientInfo, toClientInfo, toSecretInfo } from './record.ts'
import { type ClientRegistration, parseClientRegistration, type ParsedClientRegistration } from './registration.ts'
import {
  assertConfidential,
  keptSecrets,
  newSecret,
  parseNewSecret,
  parseRetirement,
  secretsOf,
  withRetiredSecret,
} from './secrets.ts'
import { rehashSecret } from '../security/index.ts'
import type { SigningAlgorithm } from '../crypto/index.ts'
import type { ClientRecord, SecretRecord, Store } from '../storage/index.ts'

/** What the writes need: the store, the clock, the PBKDF2 cost, and the cache to drop changed clients from. */
export interface ClientWrites {
  store: Store
  now: () => number
  iterations: number
  /** The most PBKDF2 iterations this platform computes: a stored hash above it cannot be kept by `sync`. */
  maxIterations?: number
  cache: ClientCache
  /** The algs the service signs with: a registration's `idTokenSignedResponseAlg` must be one. */
  algorithms?: readonly SigningAlgorithm[]
}

/** What `update` may change: any registration field; `clientSecret: null` makes the client public. */
export type ClientChanges = Partial<Omit<ClientRegistration, 'clientId' | 'clientSecret'>> & {
  clientSecret?: string | null
}

/** Read-modify-writes retried on a concurrent change before `update` and rotation give up. */
const CHANGE_ATTEMPTS = 8

function fromRegistration(
  reg: ParsedClientRegistration,
  secrets: SecretRecord[],
  createdAt: number,
  now: () => number,
): ClientRecord {
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
    ...securityFields(reg),
    createdAt,
    updatedAt: now(),
  }
}

/** The authentication, PAR, DPoP and ID token settings a registration carries (only those it sets). */
function securityFields(reg: ParsedClientRegistration): Partial<ClientRecord> {
  const fields: Partial<ClientRecord> = {}
  if (reg.tokenEndpointAuthMethod !== undefined) fields.tokenEndpointAuthMethod = reg.tokenEndpointAuthMethod
  if (reg.jwks !== undefined) fields.jwks = reg.jwks
  if (reg.jwksUri !== undefined) fields.jwksUri = reg.jwksUri
  if (reg.requirePushedAuthorizationRequests) fields.requirePushedAuthorizationRequests = true
  if (reg.requireDpop) fields.requireDpop = true
  if (reg.idTokenSignedResponseAlg !== undefined) fields.idTokenSignedResponseAlg = reg.idTokenSignedResponseAlg
  if (reg.backchannelLogoutUri !== undefined) fields.backchannelLogoutUri = reg.backchannelLogoutUri
  if (reg.backchannelLogoutSessionRequired) fields.backchannelLogoutSessionRequired = true
  if (reg.authorizationDetailsTypes?.length) fields.authorizationDetailsTypes = reg.authorizationDetailsTypes
  if (reg.backchannelTokenDeliveryMode !== undefined)
    fields.backchannelTokenDeliveryMode = reg.backchannelTokenDeliveryMode
  if (reg.backchannelClientNotificationEndpoint !== undefined)
    fields.backchannelClientNotificationEndpoint = reg.backchannelClientNotificationEndpoint
  return fields
}

async function toRecord(w: ClientWrites, registration: ClientRegistration, createdAt: number): Promise<ClientRecord> {
  const reg = parseClientRegistration(registration)
  const alg = reg.idTokenSignedResponseAlg
  if (alg !== undefined && w.algorithms && !w.algorithms.includes(alg)) {
    throw new TypeError(
      `invalid client registration\nidTokenSignedResponseAlg: ${alg} is not one the service signs with (${w.algorithms.join(', ')})`,
    )
  }
  return fromRegistration(reg, await secretsOf(reg.clientSecret, w.iterations, w.now), createdAt, w.now)
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

async function load(store: Store, clientId: string): Promise<ClientRecord> {
  const existing = await store.clients.get(clientId)
  if (!existing) throw new TypeError(`client ${JSON.stringify(clientId)} does not exist`)
  return existing
}

/** The record `changes` make of `existing` (the host's `update`). */
async function merge(w: ClientWrites, existing: ClientRecord, changes: ClientChanges): Promise<ClientRecord> {
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
    tokenEndpointAuthMethod: existing.tokenEndpointAuthMethod,
    jwks: existing.jwks,
    jwksUri: existing.jwksUri,
    requirePushedAuthorizationRequests: existing.requirePushedAuthorizationRequests,
    requireDpop: existing.requireDpop,
    idTokenSignedResponseAlg: existing.idTokenSignedResponseAlg,
    backchannelLogoutUri: existing.backchannelLogoutUri,
    backchannelLogoutSessionRequired: existing.backchannelLogoutSessionRequired,
    authorizationDetailsTypes: existing.authorizationDetailsTypes,
    backchannelTokenDeliveryMode: existing.backchannelTokenDeliveryMode,
    backchannelClientNotificationEndpoint: existing.backchannelClientNotificationEndpoint,
  }
  for (const [name, value] of Object.entries(changes)) {
    // The id is the key: an untyped caller's `clientId` in changes must not retarget the update.
    if (name !== 'clientId' && value !== undefined) merged[name] = value
  }
  const keepSecrets = changes.clientSecret === undefined
  if (keepSecrets && existing.secrets.length > 0) merged.clientSecret = existing.secrets[0]?.hash
  if (changes.clientSecret === null) delete merged.clientSecret
  const record = await toRecord(w, merged as unknown as ClientRegistration, existing.createdAt)
  if (keepSecrets) record.secrets = existing.secrets
  if (existing.registration) record.registration = existing.registration
  return record
}

/**
 * Read-modify-write of one client as a compare-and-set: `next` sees the stored record and
 * returns its successor (or `existing` itself: no write), written only if nobody changed the
 * record meanwhile (another call, another instance); otherwise it runs again on the fresh
 * record. Nothing is lost to a race.
 */
async function change(
  w: ClientWrites,
  clientId: string,
  next: (existing: ClientRecord) => Promise<ClientRecord> | ClientRecord,
): Promise<ClientRecord> {
  for (let attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
    const existing = await load(w.store, clientId)
    const record = await next(existing)
    if (record === existing) return existing // nothing to change
    if (await w.store.clients.update(record, existing)) {
      w.cache.delete(clientId)
      return record
    }
  }
  throw new Error(`client ${JSON.stringify(clientId)} kept changing during the update; try again`)
}

/** `service.clients.ensure`: registers a client unless one with this id exists. */
export async function ensureClient(
  w: ClientWrites,
  registration: ClientRegistration,
): Promise<{ created: boolean; client: ClientInfo }> {
  const existing = await w.store.clients.get(String((registration as { clientId?: unknown }).clientId))
  if (existing) {
    parseClientRegistration(registration)
    return { created: false, client: toClientInfo(existing) }
  }
  const record = await toRecord(w, registration, w.now())
  const created = await w.store.clients.insert(record)
  w.cache.delete(record.clientId)
  const stored = created ? record : await w.store.clients.get(record.clientId)
  return { created, client: toClientInfo(stored ?? record) }
}

/** `service.clients.sync`: makes the stored client exactly what the registration says. */
export async function syncClient(
  w: ClientWrites,
  registration: ClientRegistration,
): Promise<{ status: 'created' | 'updated' | 'unchanged'; client: ClientInfo }> {
  const reg = parseClientRegistration(registration)
  if (!(await w.store.clients.get(reg.clientId))) {
    const record = fromRegistration(reg, await secretsOf(reg.clientSecret, w.iterations, w.now), w.now(), w.now)
    if (await w.store.clients.insert(record)) {
      w.cache.delete(reg.clientId)
      return { status: 'created', client: toClientInfo(record) }
    }
  }
  let status: 'updated' | 'unchanged' = 'unchanged'
  let replacement: SecretRecord[] | undefined
  const record = await change(w, reg.clientId, async (existing) => {
    // Hashed once, even when a concurrent change makes this run again.
    let secrets = await keptSecrets(existing, reg.clientSecret, w.now, w.maxIterations)
    if (!secrets) {
      replacement ??= await secretsOf(reg.clientSecret, w.iterations, w.now)
      secrets = replacement
    }
    const next = fromRegistration(reg, secrets, existing.createdAt, w.now)
    if (sameClient(next, existing)) {
      status = 'unchanged'
      return existing
    }
    status = 'updated'
    return next
  })
  return { status, client: toClientInfo(record) }
}

/** `service.clients.update`: fields left out keep their value. */
export async function updateClient(w: ClientWrites, clientId: string, changes: ClientChanges): Promise<ClientInfo> {
  const record = await change(w, clientId, (existing) => merge(w, existing, changes))
  return toClientInfo(record)
}

/** `service.clients.addSecret`: a new secret next to the client's current ones. */
export async function addClientSecret(w: ClientWrites, clientId: string, input: unknown): Promise<AddedSecret> {
  const parsed = parseNewSecret(input)
  assertConfidential(await load(w.store, clientId), clientId)
  const { secret, record } = await newSecret(parsed, w.iterations, w.now())
  await change(w, clientId, (existing) => {
    assertConfidential(existing, clientId)
    return { ...existing, secrets: [...existing.secrets, record], updatedAt: w.now() }
  })
  return { ...toSecretInfo(record), secret }
}

/** `service.clients.retireSecret`: the secret stops authenticating at `at` (default now). */
export async function retireClientSecret(
  w: ClientWrites,
  clientId: string,
  id: string,
  input: unknown,
): Promise<ClientInfo> {
  const at = parseRetirement(input) ?? w.now()
  const record = await change(w, clientId, (existing) => withRetiredSecret(existing, { clientId, id, at }, w.now()))
  return toClientInfo(record)
}

/**
 * The client authentication's rehash: the secret whose stored hash is `stored` (just verified with
 * `secret`) hashed again with the configured iteration count and its own salt, so its id and
 * expiry stay. A compare-and-set like every write; nothing to do when the hash was changed or
 * rotated away meanwhile (another instance rehashing the same secret writes the same hash).
 */
export async function rehashClientSecret(
  w: ClientWrites,
  clientId: string,
  stored: string,
  secret: string,
): Promise<boolean> {
  const hash = await rehashSecret(secret, stored, w.iterations)
  let written = false
  await change(w, clientId, (existing) => {
    written = false
    if (!existing.secrets.some((record) => record.hash === stored)) return existing
    written = true
    const secrets = existing.secrets.map((record) => (record.hash === stored ? { ...record, hash } : record))
    return { ...existing, secrets, updatedAt: w.now() }
  })
  return written
}
