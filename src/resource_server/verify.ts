/**
 * @module resource_server/verify
 * Verification of an access token by the resource-server helper: an RFC 9068 JWT (`typ` at+jwt)
 * signed by one of the issuer's keys with an allowed alg, for this API (`aud`), unexpired, with the
 * claims Gatehouse always sets, sent with the scheme its binding calls for and, when DPoP-bound,
 * a proof of its key (RFC 9449 §7), and with the scopes the call needs; with `introspection`, still
 * active at the issuer (RFC 7662). Failures are RFC 6750 refusals with fixed descriptions.
 */
import { errors, jwtVerify } from 'jose'
import { IntrospectionFailedError, createIntrospectionCheck } from './introspection.ts'
import {
  type BearerErrorCode,
  type ChallengeSettings,
  type Credentials,
  type DpopErrorCode,
  Refusal,
  readCredentials,
  refusedResponse,
} from './bearer.ts'
import { type DpopCheck, boundKey, createDpopCheck } from './dpop.ts'
import { type IssuerAccess, IssuerUnavailableError } from './issuer.ts'
import { type ResourceServerSettings, checkScopes } from './options.ts'
import type { AccessTokenClaims } from '../tokens/index.ts'

/** A verified access token. */
export interface AuthenticatedRequest {
  /** The access token as sent. */
  token: string
  /** Its claims, checked: iss, sub, aud, exp, iat, jti, client_id and scope are present and typed. */
  claims: AccessTokenClaims
  /** The token's scopes (its `scope` claim split on spaces). */
  scopes: string[]
  /**
   * Whom the token represents: `client` for a client-credentials token (it carries
   * `gty: "client_credentials"`; its `sub` is the client id), `user` for an end-user's token.
   * Tell them apart by this, never by comparing `sub` with `client_id`.
   */
  subjectType: 'client' | 'user'
  /**
   * For a DPoP-bound token (RFC 9449), sent with the `DPoP` scheme and a good proof: the JWK SHA-256
   * thumbprint of its key (`claims.cnf.jkt`). Absent for a bearer token.
   */
  dpop?: { jkt: string }
}

/** A refused request: the `response` to send back, and why (for logs). */
export interface RefusedRequest {
  /** Always `false`: the request is refused. */
  ok: false
  /**
   * The RFC 6750 error code, or RFC 9449's for a bad DPoP proof (`invalid_dpop_proof`) or a missing
   * server nonce (`use_dpop_nonce`); `undefined` when the request carried no access token in a
   * scheme this API accepts (the host may serve it anonymously instead of sending `response`).
   */
  error: BearerErrorCode | DpopErrorCode | undefined
  /** Why, in words; never contains the token. */
  description: string
  /**
   * 400, 401 or 403 with a JSON body and `Cache-Control: no-store`; 401 and 403 with a
   * `WWW-Authenticate` challenge per accepted scheme (`Bearer`, then `DPoP` with `algs`).
   */
  response: Response
}

/** What {@link ResourceServer.verify} resolves: the verified token, or why the request is refused. */
export type VerifyResult = ({ ok: true } & AuthenticatedRequest) | RefusedRequest

/** Per-call options of `ResourceServer.verify` and `ResourceServer.protect`. */
export interface VerifyOptions {
  /** Scopes this call needs, in addition to `requiredScopes`. */
  scopes?: readonly string[]
}

/** A fixed description for a failed verification (never echoing the token or its claims). */
function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the access token has expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss':
        return 'the access token was issued by another issuer'
      case 'aud':
        return 'the access token is not meant for this API'
      case 'nbf':
        return 'the access token is not valid yet'
      case 'iat':
        return 'the access token has an invalid issue time'
      case 'typ':
        return 'the token is not a JWT access token (typ at+jwt, RFC 9068)'
      default:
        return 'the access token lacks a required claim'
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the access token signature is invalid'
  if (err instanceof errors.JWKSNoMatchingKey) return 'the access token is signed by an unknown key'
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the access token is signed with an algorithm that is not allowed'
  return 'the access token is invalid'
}

/** Verifies a request's access token, or a token given as a string (as a bearer token). */
export type Verify = (input: Request | string, verifyOptions?: VerifyOptions) => Promise<VerifyResult>

/** RFC 9449 §7.1: what a DPoP-only API says to a request without a DPoP-bound token. */
const DPOP_ONLY = 'this API accepts DPoP-bound access tokens only (RFC 9449)'

export function createVerifier(settings: ResourceServerSettings, issuerAccess: IssuerAccess): Verify {
  const { requiredScopes, dpop } = settings
  const now = (): number => settings.now?.() ?? Math.floor(Date.now() / 1000)
  const challenge: ChallengeSettings = {
    realm: settings.realm,
    resourceMetadata: settings.resource?.metadataUrl,
    bearer: !dpop.required,
    dpopAlgorithms: dpop.algorithms,
  }
  const stillActive = settings.introspection ? createStillActive(settings, issuerAccess, now) : undefined
  const dpopCheck = createDpopCheck(dpop, settings.clockTolerance, now)

  async function check(
    credentials: Credentials,
    request: Request | undefined,
    required: string[],
  ): Promise<AuthenticatedRequest | Refusal> {
    const { token } = credentials
    const verified = await verifyJwt(token, settings, issuerAccess)
    if (verified instanceof Refusal) return verified
    const { claims, scopes } = verified
    const jkt = await checkBinding(credentials, request, claims, dpop.required, dpopCheck)
    if (jkt instanceof Refusal) return jkt
    const missing = required.filter((s) => !scopes.includes(s))
    if (missing.length > 0) {
      return new Refusal(
        403,
        'insufficient_scope',
        `the access token lacks the scope ${missing.join(' ')}`,
        required.join(' '),
      )
    }
    if (stillActive && !(await stillActive(token, claims.exp))) {
      return new Refusal(401, 'invalid_token', 'the access token has been revoked')
    }
    // Client-credentials tokens say so (gty); an end-user's token always has auth_time.
    const subjectType = claims.gty === 'client_credentials' || claims.auth_time === undefined ? 'client' : 'user'
    return { token, claims, scopes, subjectType, ...(jkt !== undefined ? { dpop: { jkt } } : {}) }
  }

  return async function verify(input: Request | string, verifyOptions: VerifyOptions = {}): Promise<VerifyResult> {
    const required = [...new Set([...requiredScopes, ...checkScopes('scopes', verifyOptions.scopes)])]
    const request = typeof input === 'string' ? undefined : input
    let credentials: Credentials | Refusal
    if (typeof input === 'string') {
      credentials =
        input === '' ? new Refusal(401, undefined, 'an access token is required') : { scheme: 'Bearer', token: input }
    } else {
      credentials = readCredentials(input)
    }
    let outcome: AuthenticatedRequest | Refusal
    if (credentials instanceof Refusal) outcome = credentials
    // RFC 9449 §7.1 (dpop.required): Bearer is a scheme this API does not accept, so no error code (RFC 6750 §3.1).
    else if (credentials.scheme === 'Bearer' && dpop.required) outcome = new Refusal(401, undefined, DPOP_ONLY)
    else outcome = await check(credentials, request, required)
    if (outcome instanceof Refusal) {
      const scheme = credentials instanceof Refusal ? undefined : credentials.scheme
      return {
        ok: false,
        error: outcome.error,
        description: outcome.description,
        response: refusedResponse(outcome, challenge, required, scheme),
      }
    }
    return { ok: true, ...outcome }
  }
}

/**
 * The scheme a token came with must fit its binding. Returns the bound key (`cnf.jkt`) of a
 * DPoP-bound token whose proof is good, undefined for a bearer token, or the refusal:
 * - RFC 9449 §7.2: a DPoP-bound token sent as a bearer token is refused (no downgrade);
 * - RFC 9449 §7.1: the `DPoP` scheme carries DPoP-bound tokens, whose proof (with `ath`) must be
 *   signed by the bound key; an unbound token has no key to prove, so it is refused too;
 * - a token given as a string has no request to hold a proof: a bound one is refused.
 */
async function checkBinding(
  credentials: Credentials,
  request: Request | undefined,
  claims: AccessTokenClaims,
  required: boolean,
  dpopCheck: DpopCheck,
): Promise<string | undefined | Refusal> {
  const jkt = boundKey(claims)
  if (jkt instanceof Refusal) return jkt
  if (credentials.scheme === 'Bearer' || request === undefined) {
    if (jkt === undefined) return undefined
    return new Refusal(401, 'invalid_token', 'the access token is DPoP-bound: send it with the DPoP scheme and a proof')
  }
  if (jkt === undefined) {
    return new Refusal(
      401,
      'invalid_token',
      required ? DPOP_ONLY : 'the access token is not DPoP-bound: send it as Bearer',
    )
  }
  return (await dpopCheck(request, credentials.token, jkt)) ?? jkt
}

/**
 * RFC 7662: whether the issuer still considers a token active, answers cached (see
 * `IntrospectionOptions`); an endpoint that cannot answer makes the issuer unavailable.
 */
function createStillActive(
  settings: ResourceServerSettings,
  issuerAccess: IssuerAccess,
  now: () => number,
): (token: string, exp: number) => Promise<boolean> {
  const introspection = settings.introspection as NonNullable<ResourceServerSettings['introspection']>
  const introspect = createIntrospectionCheck({
    endpoint: introspection.endpoint
      ? async () => introspection.endpoint as URL
      : issuerAccess.discoverIntrospectionEndpoint,
    clientId: introspection.clientId,
    clientSecret: introspection.clientSecret,
    cacheTtl: introspection.cacheTtl,
    cacheMax: introspection.cacheMax,
    fetch: settings.fetch,
    timeout: settings.timeout,
    now,
  })
  return async (token, exp) => {
    try {
      return await introspect(token, exp)
    } catch (err) {
      if (err instanceof IntrospectionFailedError) throw new IssuerUnavailableError(err.message, { cause: err })
      throw err
    }
  }
}

/**
 * RFC 9068 §4: the JWT's signature, `typ`, `iss`, `aud`, times and required claims, and the types
 * of the claims jose does not check. Returns the claims and scopes, or an `invalid_token` refusal.
 */
async function verifyJwt(
  token: string,
  settings: ResourceServerSettings,
  issuerAccess: IssuerAccess,
): Promise<{ claims: AccessTokenClaims; scopes: string[] } | Refusal> {
  const { now, clockTolerance } = settings
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) {
    return new Refusal(401, 'invalid_token', 'the access token is not a JWT')
  }
  let claims: AccessTokenClaims
  try {
    const current = now?.()
    const { payload } = await jwtVerify(token, issuerAccess.getKey, {
      issuer: settings.issuer,
      audience: settings.audiences,
      typ: 'at+jwt',
      algorithms: settings.algorithms,
      clockTolerance,
      ...(current !== undefined ? { currentDate: new Date(current * 1000) } : {}),
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id'],
    })
    claims = payload as AccessTokenClaims
  } catch (err) {
    if (err instanceof errors.JOSEError) return new Refusal(401, 'invalid_token', reason(err))
    throw err
  }
  // RFC 9068 §2.2 types that jose does not check; `scope` is what Gatehouse always sends.
  if (
    typeof claims.sub !== 'string' ||
    typeof claims.client_id !== 'string' ||
    typeof claims.jti !== 'string' ||
    typeof claims.scope !== 'string'
  ) {
    return new Refusal(401, 'invalid_token', 'the access token lacks a required claim')
  }
  const current = now?.() ?? Date.now() / 1000
  if (claims.iat > current + clockTolerance) {
    return new Refusal(401, 'invalid_token', 'the access token was issued in the future')
  }
  return { claims, scopes: claims.scope.split(' ').filter((s) => s !== '') }
}
