/**
 * @module client_auth/client_assertion
 * `private_key_jwt` client authentication: a JWT the client signed with its private key, sent as
 * `client_assertion` (RFC 7523 §2.2 and §3, OpenID Connect Core §9, draft-ietf-oauth-rfc7523bis).
 * Checks, in order (those before the client lookup read the assertion alone, so what they say
 * tells nothing about which clients exist):
 * - `client_assertion_type` is `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`
 * - a compact JWS of at most 8 KiB; `alg` RS256, PS256, ES256, ES384, EdDSA or Ed25519 (RFC 9864,
 *   what oauth4webapi signs with an Ed25519 key), or the caller's narrower `algorithms` (never
 *   `none` nor HMAC); `typ` absent, `JWT` or `client-authentication+jwt`
 * - `iss` and `sub` are the client_id (RFC 7523 §3 items 1, 2), and so is a form `client_id`
 * - `aud` accepted (see Audience); `exp` present, not passed, at most `maxLifetime` after `iat`
 *   (or now); `nbf` and `iat` not in the future; `jti` present
 * - the client exists and registered `private_key_jwt`
 * - the signature verifies with a registered key (never one from the JWS header): the one named
 *   by `kid`, else each whose kty and curve fit `alg`; an unknown `kid` asks the key source for a
 *   fresh copy of the client's `jwks_uri` once (it rate-limits)
 * - the `jti` was not used before by this client (recorded until `exp` plus the clock skew)
 * Every failure is `invalid_client`. From the client lookup on, whatever failed (unknown client,
 * another method, no keys, unknown kid, unreachable jwks_uri, bad signature) the description is
 * `client authentication failed`, as for a wrong client secret; specifics go to `cause` and
 * {@link assertionFailureReason}. Only a replay, found after the signature verified, says so.
 *
 * Audience: 7523bis accepts only the issuer identifier, as a single string, and forbids the token
 * endpoint URL: a malicious server can name our token endpoint as its own and replay what the
 * client signs for it. OpenID Connect Core §9 says the token endpoint SHOULD be the audience and
 * deployed clients follow it, so the caller passes the accepted values, issuer first: the issuer
 * alone is strict 7523bis; adding the token endpoint (and the endpoint called) keeps those clients
 * working at the cost of that attack. `aud` may be a string or an array containing an accepted
 * value, except that an assertion typed `client-authentication+jwt` declares it follows 7523bis
 * and is held to it: `aud` must be the issuer string. `strictAudience` holds every assertion to it
 * (FAPI 2.0 Security Profile §5.3.2.1).
 *
 * client_secret_jwt (HS256 under the client secret) is not offered: client secrets are stored only
 * as PBKDF2 hashes, and an HMAC can only be checked with the secret itself.
 */
import { type JWK, type JWTPayload, decodeJwt, decodeProtectedHeader, importJWK, jwtVerify } from 'jose'
import { OAuthError } from '../errors.ts'
import { sha256 } from '../crypto/index.ts'
import type { ClientKeyOwner } from '../clients/index.ts'

/** RFC 7523 §2.2 `client_assertion_type`. */
export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'
/** Longest accepted `client_assertion`, characters (an RS4096-signed assertion is about 1 KB). */
export const MAX_ASSERTION_LENGTH = 8192
/** The signature algorithms an assertion may use: asymmetric only (`Ed25519` is RFC 9864's name for EdDSA over Ed25519). */
export const ASSERTION_ALGORITHMS: readonly string[] = ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA', 'Ed25519']
/** Longest `exp - iat` accepted by default, seconds (oauth4webapi signs for 60). */
export const DEFAULT_MAX_LIFETIME = 300
/** Clock skew tolerated by default for `exp`, `nbf` and `iat`, seconds. */
export const DEFAULT_CLOCK_SKEW = 5
/** Keys tried when the assertion names no `kid`: bounds the work an unsigned guess costs us. */
const MAX_CANDIDATE_KEYS = 4

/** What the verifier reads of a client (a subset of `ClientRecord`). */
export interface AssertionClient extends ClientKeyOwner {
  tokenEndpointAuthMethod?: string | undefined
}

export interface ClientAssertionInput<C extends AssertionClient> {
  /** The form's `client_assertion_type`. */
  clientAssertionType: string | undefined
  /** The form's `client_assertion`. */
  clientAssertion: string | undefined
  /** The form's `client_id`, when sent: it must name the assertion's client. */
  clientId?: string | undefined
  findClient(clientId: string): Promise<C | undefined> | C | undefined
  /** The accepted `aud` values, the issuer identifier first (see the module comment). */
  audiences: readonly string[]
  /** Accept only the issuer identifier, as a single string (7523bis; FAPI 2.0 §5.3.2.1). */
  strictAudience?: boolean
  /** The accepted `alg` values, a subset of {@link ASSERTION_ALGORITHMS} (default: all of them). */
  algorithms?: readonly string[]
  /** Epoch seconds. */
  now: number
  /** Longest accepted lifetime, seconds (300). */
  maxLifetime?: number
  /** Tolerated clock skew, seconds (5). */
  clockSkew?: number
  /** Records `key` until `expiresAt`; false when it was already recorded (`store.replays.use`). */
  replay(key: string, expiresAt: number, now: number): Promise<boolean>
  /** The client's public keys (`createClientKeySource().keysFor`); `refresh` after an unknown kid. */
  keysFor(client: C, options: { refresh: boolean }): Promise<readonly JWK[]>
}

/** An assertion that authenticated its client. */
export interface VerifiedAssertion<C extends AssertionClient> {
  client: C
  clientId: string
  method: 'private_key_jwt'
  alg: string
  /** The `kid` of the key that verified, if it has one. */
  kid?: string
  jti: string
  /** The assertion's `exp` (epoch s). */
  expiresAt: number
}

/** Why an assertion was refused, for events and throttling (never sent to the caller). */
export type AssertionFailureReason =
  | 'invalid_assertion' // the assertion itself: type, format, alg, claims
  | 'unknown_client'
  | 'method_not_allowed' // the client did not register private_key_jwt
  | 'keys_unavailable' // no jwks, an unusable or unreachable jwks_uri
  | 'no_matching_key'
  | 'invalid_signature'
  | 'replayed'

const reasons = new WeakMap<OAuthError, AssertionFailureReason>()

/** Why {@link verifyClientAssertion} refused, when `err` is its error. */
export function assertionFailureReason(err: unknown): AssertionFailureReason | undefined {
  return err instanceof OAuthError ? reasons.get(err) : undefined
}

function refuse(description: string, reason: AssertionFailureReason, cause?: unknown): OAuthError {
  const error = new OAuthError('invalid_client', description, { challenge: 'Basic', cause })
  reasons.set(error, reason)
  return error
}

const invalid = (description: string, cause?: unknown) => refuse(description, 'invalid_assertion', cause)
const failed = (reason: AssertionFailureReason, cause?: unknown) =>
  refuse('client authentication failed', reason, cause)

/** What the checks before the client lookup read. */
type AssertionSettings = Omit<ClientAssertionInput<AssertionClient>, 'findClient' | 'replay' | 'keysFor'>

interface Parsed {
  assertion: string
  clientId: string
  alg: string
  kid: string | undefined
  jti: string
  exp: number
}

/** The header checks; returns alg and kid, and whether the assertion is typed as 7523bis. */
function readHeader(
  assertion: string,
  algorithms: readonly string[],
): { alg: string; kid: string | undefined; typed: boolean } {
  let header: Record<string, unknown>
  try {
    header = decodeProtectedHeader(assertion) as Record<string, unknown>
  } catch (cause) {
    throw invalid('client_assertion is not a valid JWT', cause)
  }
  const { alg, kid, typ } = header
  if (typeof alg !== 'string' || !ASSERTION_ALGORITHMS.includes(alg) || !algorithms.includes(alg)) {
    throw invalid('client_assertion alg is not allowed')
  }
  if (kid !== undefined && typeof kid !== 'string') throw invalid('client_assertion kid is not a string')
  const type = typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : typ
  // RFC 8725 §3.11: a JWT of another explicit type (an access token, a DPoP proof) is not one.
  if (type !== undefined && type !== 'jwt' && type !== 'client-authentication+jwt') {
    throw invalid('client_assertion typ is not allowed')
  }
  return { alg, kid, typed: type === 'client-authentication+jwt' }
}

/** Whether `aud` is accepted (see Audience in the module comment). */
function audienceAccepted(aud: unknown, audiences: readonly string[], typed: boolean): boolean {
  // A 7523bis assertion: the issuer identifier as the sole value, a JSON string.
  if (typed) return aud === audiences[0]
  if (typeof aud === 'string') return audiences.includes(aud)
  return Array.isArray(aud) && aud.some((value) => typeof value === 'string' && audiences.includes(value))
}

/** A NumericDate claim (RFC 7519 §2), if present. */
function numericDate(payload: JWTPayload, name: 'exp' | 'nbf' | 'iat'): number | undefined {
  const value: unknown = payload[name]
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`client_assertion ${name} is not a number`)
  return value
}

/** The claim checks (RFC 7523 §3) that need no client. */
function checkClaims(payload: JWTPayload, input: AssertionSettings, typed: boolean) {
  const { now } = input
  const skew = input.clockSkew ?? DEFAULT_CLOCK_SKEW
  const maxLifetime = input.maxLifetime ?? DEFAULT_MAX_LIFETIME
  const { iss, sub, jti } = payload
  // RFC 7523 §3 items 1 and 2: for client authentication both name the client.
  if (typeof sub !== 'string' || sub === '' || iss !== sub) {
    throw invalid('client_assertion iss and sub must both be the client_id')
  }
  // As for a form client_id: no character a store cannot keep (U+0000, an unpaired surrogate).
  // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what this refuses.
  if (/\u0000|\p{Cs}/u.test(sub)) throw invalid('client_assertion sub is not a valid client_id')
  if (input.clientId !== undefined && input.clientId !== sub) {
    throw invalid('client_id does not match the client assertion')
  }
  // RFC 7523 §3 item 3 and draft-ietf-oauth-rfc7523bis (see Audience in the module comment).
  if (!audienceAccepted(payload.aud, input.audiences, typed || input.strictAudience === true)) {
    throw invalid('client_assertion aud must be the issuer identifier')
  }
  const [exp, nbf, iat] = [numericDate(payload, 'exp'), numericDate(payload, 'nbf'), numericDate(payload, 'iat')]
  // RFC 7523 §3 items 4 to 6.
  if (exp === undefined) throw invalid('client_assertion must have an exp')
  if (exp <= now - skew) throw invalid('client_assertion has expired')
  if ((nbf !== undefined && nbf > now + skew) || (iat !== undefined && iat > now + skew)) {
    throw invalid('client_assertion is not yet valid')
  }
  // The replay record lives until exp: a bounded lifetime bounds what the store keeps.
  if (iat !== undefined ? exp - iat > maxLifetime : exp - now > maxLifetime + skew) {
    throw invalid('client_assertion lifetime is too long')
  }
  // RFC 7523 §3 item 7.
  if (typeof jti !== 'string' || jti === '') throw invalid('client_assertion must have a jti')
  return { clientId: sub, jti, exp }
}

/** Reads and checks what the assertion says, before any client is looked up. */
function parseAssertion(input: AssertionSettings): Parsed {
  if (input.clientAssertionType !== JWT_BEARER_ASSERTION_TYPE) {
    throw invalid(`client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE}`)
  }
  const assertion = input.clientAssertion
  if (assertion === undefined || assertion === '') throw invalid('client_assertion is missing')
  if (assertion.length > MAX_ASSERTION_LENGTH) throw invalid('client_assertion is too long')
  const { alg, kid, typed } = readHeader(assertion, input.algorithms ?? ASSERTION_ALGORITHMS)
  let payload: JWTPayload
  try {
    payload = decodeJwt(assertion)
  } catch (cause) {
    throw invalid('client_assertion is not a valid JWT', cause)
  }
  return { ...checkClaims(payload, input, typed), assertion, alg, kid }
}

/** Whether a JWK can verify `alg` (kty and curve fit; `alg`, `use`, `key_ops` do not forbid it). */
function fits(key: JWK, alg: string): boolean {
  const eddsa = alg === 'EdDSA' || alg === 'Ed25519'
  if (key.alg !== undefined && key.alg !== alg && !(eddsa && (key.alg === 'EdDSA' || key.alg === 'Ed25519'))) {
    return false
  }
  if (key.use !== undefined && key.use !== 'sig') return false
  if (key.key_ops !== undefined && !key.key_ops.includes('verify')) return false
  if (alg === 'RS256' || alg === 'PS256') return key.kty === 'RSA'
  if (alg === 'ES256') return key.kty === 'EC' && key.crv === 'P-256'
  if (alg === 'ES384') return key.kty === 'EC' && key.crv === 'P-384'
  return eddsa && key.kty === 'OKP' && key.crv === 'Ed25519'
}

/**
 * The keys that may verify a JWS of `alg`: the one named by `kid`, else each whose kty and curve
 * fit `alg`, at most four (bounds the work an unsigned guess costs). Also the ID-JAG verifier's (#45).
 */
export function candidates(keys: readonly JWK[], alg: string, kid: string | undefined): JWK[] {
  return keys.filter((key) => (kid === undefined || key.kid === kid) && fits(key, alg)).slice(0, MAX_CANDIDATE_KEYS)
}

/** The client's keys; any failure to get them is the generic failure (it would tell the client exists). */
async function keysOf<C extends AssertionClient>(
  input: ClientAssertionInput<C>,
  client: C,
  refresh: boolean,
): Promise<readonly JWK[]> {
  try {
    return await input.keysFor(client, { refresh })
  } catch (err) {
    if (err instanceof OAuthError) throw failed('keys_unavailable', err)
    throw err
  }
}

/** The key of the client's that verifies the signature (RFC 7523 §3 item 9). */
async function verifySignature<C extends AssertionClient>(
  input: ClientAssertionInput<C>,
  client: C,
  parsed: Parsed,
): Promise<JWK> {
  const { assertion, alg, kid } = parsed
  let found = candidates(await keysOf(input, client, false), alg, kid)
  // An unknown kid: the client may have rotated its keys since they were fetched.
  if (found.length === 0) found = candidates(await keysOf(input, client, true), alg, kid)
  if (found.length === 0) throw failed('no_matching_key')
  let lastError: unknown
  for (const jwk of found) {
    try {
      const key = await importJWK(jwk, alg)
      await jwtVerify(assertion, key, {
        algorithms: [alg],
        currentDate: new Date(input.now * 1000),
        clockTolerance: input.clockSkew ?? DEFAULT_CLOCK_SKEW,
      })
      return jwk
    } catch (err) {
      lastError = err
    }
  }
  throw failed('invalid_signature', lastError)
}

/**
 * Authenticates a client by its `private_key_jwt` assertion (see the module comment).
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 * @see https://openid.net/specs/openid-connect-core-1_0.html#ClientAuthentication
 * @example
 * const { client } = await verifyClientAssertion({
 *   clientAssertionType: params.get('client_assertion_type'),
 *   clientAssertion: params.get('client_assertion'),
 *   clientId: params.get('client_id'),
 *   findClient: (id) => store.clients.get(id),
 *   audiences: [config.issuer, `${config.issuer}/connect/token`],
 *   now: ctx.now(),
 *   replay: (key, expiresAt, now) => store.replays.use(key, expiresAt, now),
 *   keysFor: keySource.keysFor,
 * })
 */
export async function verifyClientAssertion<C extends AssertionClient>(
  input: ClientAssertionInput<C>,
): Promise<VerifiedAssertion<C>> {
  if (input.audiences.length === 0 || !input.audiences[0]) {
    throw new TypeError('"audiences" must start with the issuer identifier')
  }
  const parsed = parseAssertion(input)
  const client = await input.findClient(parsed.clientId)
  if (!client) throw failed('unknown_client')
  if (client.tokenEndpointAuthMethod !== 'private_key_jwt') throw failed('method_not_allowed')
  const jwk = await verifySignature(input, client, parsed)
  // RFC 7523 §3 item 7: one use per jti, recorded per client under a hash (never the raw value).
  const key = `jwt:${parsed.clientId}:${await sha256(parsed.jti)}`
  const skew = input.clockSkew ?? DEFAULT_CLOCK_SKEW
  if (!(await input.replay(key, Math.ceil(parsed.exp) + skew, input.now))) {
    throw refuse('client_assertion has already been used', 'replayed')
  }
  return {
    client,
    clientId: parsed.clientId,
    method: 'private_key_jwt',
    alg: parsed.alg,
    ...(jwk.kid !== undefined ? { kid: jwk.kid } : {}),
    jti: parsed.jti,
    expiresAt: parsed.exp,
  }
}
