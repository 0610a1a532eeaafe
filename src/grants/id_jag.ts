/**
 * @module grants/id_jag
 * Verifying an Identity Assertion JWT Authorization Grant (ID-JAG,
 * draft-ietf-oauth-identity-assertion-authz-grant §4, RFC 7523 §3) presented to the jwt-bearer
 * grant. Checks, in order, each `invalid_grant` (RFC 7521 §4.1.1, RFC 7523 §3.1) whose description
 * names the rule and never the token:
 * - a compact JWS of at most 16 KiB whose `typ` is `oauth-id-jag+jwt` (an ID token, a logout
 *   token, an access token, a client assertion is not an ID-JAG)
 * - its `iss` (read unverified, only to choose the keys) is a trusted identity provider
 *   (`identityAssertion.issuers`), and its `alg` one that provider may use
 * - the signature verifies with a key of that provider (never one from the JWS header): inline
 *   `jwks`, or its `jwksUri` fetched and cached as client `jwks_uri`s are (src/clients/jwks.ts),
 *   with one refetch for an unknown `kid` (at most once per 30 s per URI)
 * - `aud` is this server's issuer identifier, a single string (#45 review item 3: not an array,
 *   even one holding only this issuer); `exp` in the future, `iat` (required) and `nbf` not in the
 *   future, each within {@link ID_JAG_CLOCK_SKEW}
 * - at most {@link MAX_ID_JAG_LIFETIME} long (#45 review item 4): `exp` at most that far ahead and
 *   `iat` at most that far back, each plus the skew (so its replay record is kept no longer)
 * - `sub` and `jti` present; `client_id` the authenticated client's
 * - `scope` a string and `resource` a string or strings when present
 * The caller records the `jti` (one use) and resolves the account.
 */
import { type JWK, type JWTPayload, decodeJwt, decodeProtectedHeader, errors, importJWK, jwtVerify } from 'jose'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { publicSignatureKeys } from '../clients/index.ts'
import { signatureKeyCandidates } from '../client_auth/index.ts'
import type { Config } from '../config/index.ts'

/** The `typ` of an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant §3). */
export const ID_JAG_TYP = 'oauth-id-jag+jwt'
/** Longest accepted assertion, characters. */
export const MAX_ID_JAG_LENGTH = 16_384
/** Clock skew tolerated for `exp`, `iat` and `nbf`, seconds. */
export const ID_JAG_CLOCK_SKEW = 30
/**
 * The longest an ID-JAG may live here, seconds (#45 review item 4): its `exp` at most this far
 * ahead, its `iat` at most this far back (each plus the skew). The draft asks for short-lived
 * ID-JAGs; this one also bounds how long its `jti` is kept.
 */
export const MAX_ID_JAG_LIFETIME = 3600

type IssuerEntry = NonNullable<NonNullable<Config['identityAssertion']>['issuers']>[number]

/** An ID-JAG that verified. */
export interface VerifiedIdJag {
  /** The trusted identity provider's entry. */
  issuer: IssuerEntry
  /** Every claim (`iss`, `sub`, `jti`, `exp`, `iat` and `client_id` checked). */
  claims: JWTPayload & { iss: string; sub: string; jti: string; exp: number; iat: number }
  /** The scopes it carries (`scope`), none when absent. */
  scopes: string[]
  /** The resources it names (`resource`), none when absent. */
  resources: string[]
}

function refuse(description: string, cause?: unknown): never {
  throw new OAuthError('invalid_grant', description, cause === undefined ? undefined : { cause })
}

/** RFC 8725 §3.11 `typ`, compared as a media type: case-insensitive, `application/` optional. */
function isIdJagType(typ: unknown): boolean {
  if (typeof typ !== 'string') return false
  const lower = typ.toLowerCase()
  return (lower.startsWith('application/') ? lower.slice('application/'.length) : lower) === ID_JAG_TYP
}

/** Whether the issuer's `algorithms` allow `alg` (EdDSA and Ed25519, RFC 9864, are one). */
function allowsAlg(entry: IssuerEntry, alg: string): boolean {
  const eddsa = (value: string) => value === 'EdDSA' || value === 'Ed25519'
  return entry.algorithms.some((allowed) => allowed === alg || (eddsa(allowed) && eddsa(alg)))
}

/** The header and the trusted issuer of an assertion, before its signature is checked. */
function readUnverified(assertion: string, ctx: Context): { alg: string; kid?: string; entry: IssuerEntry } {
  if (assertion.length > MAX_ID_JAG_LENGTH) refuse('the assertion is too long')
  let header: ReturnType<typeof decodeProtectedHeader>
  let payload: JWTPayload
  try {
    if (assertion.split('.').length !== 3) throw new TypeError('not a compact JWS')
    header = decodeProtectedHeader(assertion)
    payload = decodeJwt(assertion)
  } catch (cause) {
    return refuse('the assertion is not a signed JWT', cause)
  }
  if (!isIdJagType(header.typ)) refuse(`the assertion is not an ID-JAG: its typ must be ${ID_JAG_TYP}`)
  const entry = ctx.config.identityAssertion?.issuers?.find((candidate) => candidate.issuer === payload.iss)
  if (typeof payload.iss !== 'string' || entry === undefined) refuse("the assertion's issuer is not trusted")
  const alg = header.alg
  if (typeof alg !== 'string' || !allowsAlg(entry, alg)) {
    refuse("the assertion's alg is not one its issuer may use")
  }
  return { alg, entry, ...(typeof header.kid === 'string' ? { kid: header.kid } : {}) }
}

/** The identity provider's public keys: inline, or from its jwksUri (cached; `refresh` after an unknown kid). */
async function issuerKeys(entry: IssuerEntry, refresh: boolean, ctx: Context): Promise<JWK[]> {
  try {
    if (entry.jwks !== undefined) return publicSignatureKeys(entry.jwks)
    // Host-configured: fetched as a host-registered client's jwks_uri (no address guard, no budget).
    const owner = { clientId: `identity-assertion ${entry.issuer}`, jwksUri: entry.jwksUri }
    return await ctx.clientKeys.keysFor(owner, { refresh })
  } catch (cause) {
    if (cause instanceof OAuthError) refuse("the keys of the assertion's issuer are unavailable", cause)
    throw cause
  }
}

/** What a jose claim failure means, as the rule it broke. */
function claimFailure(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the assertion has expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return `the assertion lacks the ${err.claim} claim`
    if (err.claim === 'aud') return "the assertion's audience is not this authorization server"
    if (err.claim === 'iat' || err.claim === 'nbf')
      return `the assertion is not valid yet (${err.claim} is in the future)`
    return `the assertion's ${err.claim} claim is invalid`
  }
  return 'the assertion is not a valid JWT'
}

/** Verifies the signature and the registered claims with jose; returns the payload. */
async function verifyWith(
  assertion: string,
  keys: JWK[],
  alg: string,
  entry: IssuerEntry,
  ctx: Context,
): Promise<JWTPayload> {
  let lastError: unknown
  for (const jwk of keys) {
    let key: Awaited<ReturnType<typeof importJWK>>
    try {
      key = await importJWK(jwk, alg)
    } catch (err) {
      lastError = err
      continue
    }
    try {
      const { payload } = await jwtVerify(assertion, key, {
        algorithms: [alg],
        typ: ID_JAG_TYP,
        issuer: entry.issuer,
        audience: ctx.config.issuer,
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
        currentDate: new Date(ctx.now() * 1000),
        clockTolerance: ID_JAG_CLOCK_SKEW,
      })
      return payload
    } catch (err) {
      // jose checks the signature before any claim: a claim failure is the verified token's.
      if (!(err instanceof errors.JWSSignatureVerificationFailed)) refuse(claimFailure(err), err)
      lastError = err
    }
  }
  return refuse("the assertion's signature does not verify with a key of its issuer", lastError)
}

/** `scope` (a string) and `resource` (a string or strings) of a verified payload. */
function targetOf(payload: JWTPayload): { scopes: string[]; resources: string[] } {
  const { scope, resource } = payload
  if (scope !== undefined && typeof scope !== 'string') refuse("the assertion's scope claim is not a string")
  const resources = resource === undefined ? [] : Array.isArray(resource) ? resource : [resource]
  if (!resources.every((value) => typeof value === 'string')) refuse("the assertion's resource claim is invalid")
  return { scopes: (scope ?? '').split(' ').filter((s) => s !== ''), resources: resources as string[] }
}

/** `iat` not in the future; `exp` and `iat` within {@link MAX_ID_JAG_LIFETIME} of now (plus the skew). */
function checkTimes(payload: JWTPayload, now: number): void {
  // jose checks iat only with maxTokenAge: an assertion is not issued in the future.
  if ((payload.iat as number) > now + ID_JAG_CLOCK_SKEW) refuse('the assertion is not valid yet (iat is in the future)')
  if ((payload.exp as number) > now + MAX_ID_JAG_LIFETIME + ID_JAG_CLOCK_SKEW) {
    refuse('the assertion lives too long: exp is more than an hour ahead')
  }
  if ((payload.iat as number) < now - MAX_ID_JAG_LIFETIME - ID_JAG_CLOCK_SKEW) {
    refuse('the assertion is too old: iat is more than an hour ago')
  }
}

/**
 * Verifies an ID-JAG presented by `clientId` (see the module comment).
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-oauth-identity-assertion-authz-grant/
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 */
export async function verifyIdJag(assertion: string, clientId: string, ctx: Context): Promise<VerifiedIdJag> {
  const { alg, kid, entry } = readUnverified(assertion, ctx)
  let keys = signatureKeyCandidates(await issuerKeys(entry, false, ctx), alg, kid)
  // An unknown kid: the identity provider may have rotated its keys since they were fetched.
  if (keys.length === 0 && entry.jwksUri !== undefined) {
    keys = signatureKeyCandidates(await issuerKeys(entry, true, ctx), alg, kid)
  }
  if (keys.length === 0) refuse("no key of the assertion's issuer matches its kid and alg")
  const payload = await verifyWith(assertion, keys, alg, entry, ctx)
  checkTimes(payload, ctx.now())
  // jose accepts an array holding the issuer: an ID-JAG is for exactly one authorization server.
  if (payload.aud !== ctx.config.issuer) refuse("the assertion's aud must be a single string: this issuer")
  if (typeof payload.sub !== 'string' || payload.sub === '') refuse('the assertion lacks the sub claim')
  if (typeof payload.jti !== 'string' || payload.jti === '') refuse('the assertion lacks the jti claim')
  if (payload.client_id === undefined) refuse('the assertion lacks the client_id claim')
  // draft §4.3: the client_id claim names the client the grant is for, the one authenticated here.
  if (payload.client_id !== clientId) refuse('the assertion was issued to another client (client_id)')
  return { issuer: entry, claims: payload as VerifiedIdJag['claims'], ...targetOf(payload) }
}
