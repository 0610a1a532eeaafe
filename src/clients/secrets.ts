/**
 * @module clients/secrets
 * Client secrets on the host's side: generated (256 random bits), hashed before they reach the
 * store (PBKDF2, see src/security/secrets.ts), kept across a re-registration while they still verify, added
 * next to the current ones and retired with a grace period (rotation without downtime).
 */
import { base64url } from 'jose'
import * as v from 'valibot'
import { formatIssues, withoutInputs } from '../schema_issues.ts'
import { hashSecret, isSecretHash, verifySecret } from '../security/index.ts'
import { secretId } from './record.ts'
import type { ClientRecord, SecretRecord } from '../storage/index.ts'

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

/** A random client secret: 32 bytes, base64url. */
export function generateSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return base64url.encode(bytes)
}

/** The stored secrets of a registration's secret: none, or its hash (hashed here unless it is one). */
export async function secretsOf(
  secret: string | undefined,
  iterations: number,
  now: () => number,
): Promise<SecretRecord[]> {
  if (secret === undefined) return []
  return [{ hash: isSecretHash(secret) ? secret : await hashSecret(secret, iterations), createdAt: now() }]
}

/**
 * The stored secrets to keep for a registration's secret: the client's own when the secret
 * still verifies against a live one of them (or, pre-hashed, equals one), else undefined. A hash
 * with more iterations than `maxIterations` does not verify here.
 */
export async function keptSecrets(
  existing: ClientRecord,
  secret: string | undefined,
  now: () => number,
  maxIterations?: number,
): Promise<SecretRecord[] | undefined> {
  if (secret === undefined) return existing.secrets.length === 0 ? existing.secrets : undefined
  const at = now()
  for (const record of existing.secrets) {
    if (record.expiresAt !== undefined && record.expiresAt <= at) continue
    // A hash this platform cannot compute (above `maxIterations`) is not kept: the registration's
    // secret is hashed again with the configured count, the way to migrate such a client.
    const verified = () => verifySecret(secret, record.hash, maxIterations !== undefined ? { maxIterations } : {})
    if (isSecretHash(secret) ? secret === record.hash : await verified()) return existing.secrets
  }
  return undefined
}

/** Throws unless the client has secrets (a public client has none to rotate). */
export function assertConfidential(client: ClientRecord, clientId: string): void {
  if (client.secrets.length === 0) {
    throw new TypeError(`client ${JSON.stringify(clientId)} is public: it has no secrets to rotate`)
  }
}

/** What `service.clients.addSecret` was given: an optional value (16 characters at least) and expiry. */
export function parseNewSecret(input: unknown): { secret?: string; expiresAt?: number } {
  return parseInput(AddSecretSchema, input, 'invalid secret')
}

/** The secret to add at `now`: the given or a generated value, and its hashed record (`expiresAt` must be in the future). */
export async function newSecret(
  parsed: { secret?: string; expiresAt?: number },
  iterations: number,
  now: number,
): Promise<{ secret: string; record: SecretRecord }> {
  if (parsed.expiresAt !== undefined && parsed.expiresAt <= now) {
    throw new TypeError('invalid secret\nexpiresAt: must be in the future')
  }
  const secret = parsed.secret ?? generateSecret()
  const record: SecretRecord = { hash: await hashSecret(secret, iterations), createdAt: now }
  if (parsed.expiresAt !== undefined) record.expiresAt = parsed.expiresAt
  return { secret, record }
}

/** When a secret retires (`service.clients.retireSecret`): the given `at`, or undefined for now. */
export function parseRetirement(input: unknown): number | undefined {
  return parseInput(RetireSecretSchema, input, 'invalid secret retirement').at
}

/**
 * The client with secret `id` expiring at `at` (or earlier, if it already did) and secrets expired
 * for more than a day dropped. Another secret must outlive the retirement, or the client would be
 * locked out at `at`.
 */
export function withRetiredSecret(
  existing: ClientRecord,
  retirement: { clientId: string; id: string; at: number },
  now: number,
): ClientRecord {
  const { clientId, id, at } = retirement
  const target = existing.secrets.find((secret) => secretId(secret) === id)
  if (!target) throw new TypeError(`client ${JSON.stringify(clientId)} has no secret ${JSON.stringify(id)}`)
  const retired = { ...target, expiresAt: Math.min(at, target.expiresAt ?? at) }
  const secrets = existing.secrets
    .map((secret) => (secret === target ? retired : secret))
    .filter((secret) => secret.expiresAt === undefined || secret.expiresAt > now - 86_400)
  const after = Math.max(at, now)
  if (!secrets.some((s) => s !== retired && (s.expiresAt === undefined || s.expiresAt > after))) {
    throw new TypeError('cannot retire the last valid secret: add its successor first')
  }
  return { ...existing, secrets, updatedAt: now }
}
