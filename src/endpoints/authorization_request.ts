/**
 * @module endpoints/authorization_request
 * The one validation of an authorization request (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2.1),
 * shared by the authorization endpoint and the pushed authorization request endpoint (RFC 9126
 * §2.1, §4: a pushed request is checked as any other). Checks, in order:
 * 1. client_id present, once, known                → OAuthError (never redirected)
 * 2. redirect_uri present, once, registered         → OAuthError (exact string match)
 * 3. client permissions, the profile admits it      → unauthorized_client
 *    the request was pushed if it must be (RFC 9126 §4) → invalid_request
 * 4. request / request_uri                          → request_not_supported / request_uri_not_supported
 * 5. response_type = code, response_mode query or form_post (not form_post where the profile
 *    forbids it)                                    → invalid_request / unsupported_response_type
 * 6. repeated parameters                            → invalid_request
 * 7. resource (RFC 8707 §2): absolute, no fragment, the audience of a permitted scope → invalid_target;
 *    scope: known and permitted                     → invalid_scope
 * 8. PKCE (RFC 7636 §4.3, §4.4.1)                   → invalid_request
 * 9. prompt, max_age, id_token_hint                 → invalid_request
 * 10. dpop_jkt (RFC 9449 §10): a thumbprint, the key of the pushed request's proof → invalid_request
 * 11. claims (Core §5.5): JSON of the claims request, login_hint, ui_locales, claims_locales,
 *     display, acr_values (Core §3.1.2.1)             → invalid_request;
 *     a requested claim of a scope the client is not permitted (§5.4) is dropped, no error
 * 12. authorization_details (RFC 9396 §2, src/protocol/authorization_details.ts) → invalid_authorization_details
 * 13. grant_id, grant_management_action (Grant Management §5.2, protocol/grant_actions.ts) → invalid_request, invalid_grant_id
 * Until client and redirect_uri are verified (1–2) errors are OAuthErrors, which the authorization
 * endpoint shows as a page (RFC 6749 §4.1.2.1); from 3 on they are {@link Refusal}s for the
 * verified redirect_uri, answered in the request's response_mode when it is a valid one (Form Post
 * Response Mode §2: errors too). The PAR endpoint answers both as JSON (RFC 9126 §2.3).
 */
import {
  defaultScopesForResources,
  parseClaimsParameter,
  parseAuthorizationDetails,
  parseDisplay,
  parseGrantManagement,
  parseResources,
  permittedClaims,
  RESOURCE_PARAMETERS,
  type ResponseMode,
  scopesForResources,
  verifyIdTokenHint,
} from '../protocol/index.ts'
import { isConfidential, Permissions, scopePermission } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { OAuthError, type OAuthErrorCode } from '../errors.ts'
import { type Params, checkParameter, parameterName } from '../http.ts'
import type { AuthorizationRequest } from '../interaction/index.ts'
import {
  allowsPlainPkce,
  GRANT_MANAGEMENT_SCOPES,
  allowsResponseMode,
  parseScope,
  profileRefusal,
  requiresPkce,
  requiresPushedRequests,
} from '../config/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { isValidChallenge } from '../tokens/index.ts'

/** Raw parameters with the names that were repeated, and every value of the multi-valued ones. */
export interface RawParams {
  values: Map<string, string>
  repeated: Set<string>
  /** Non-empty values of the names that may repeat (`RESOURCE_PARAMETERS`), in order. */
  lists: Map<string, string[]>
}

/** Collects name/value pairs (a query, a form, a pushed request), noting repeated names. */
export function collectParams(pairs: Iterable<[string, string]>, maxLength: number): RawParams {
  const values = new Map<string, string>()
  const repeated = new Set<string>()
  const lists = new Map<string, string[]>()
  for (const [name, value] of pairs) {
    checkParameter(name, value, maxLength)
    // RFC 8707 §2: `resource` may be given once per target.
    if (RESOURCE_PARAMETERS.has(name)) {
      if (value !== '') lists.set(name, [...(lists.get(name) ?? []), value])
      continue
    }
    if (values.has(name)) repeated.add(name)
    if (value !== '') values.set(name, value)
  }
  return { values, repeated, lists }
}

/** The raw view of a form read by `readForm` (which already refused repeated parameters), copied. */
export function rawFromForm(params: Params): RawParams {
  return { values: new Map(params), repeated: new Set(), lists: new Map(params.lists ?? []) }
}

/**
 * An error for the client, thrown by the checks after client and redirect_uri are verified: the
 * authorization endpoint redirects it (RFC 6749 §4.1.2.1), the PAR endpoint answers it as JSON.
 */
export class Refusal {
  readonly code: OAuthErrorCode
  readonly description: string

  constructor(code: OAuthErrorCode, description: string) {
    this.code = code
    this.description = description
  }
}

/** A request whose client and redirect_uri are verified: errors may now go back to the client. */
export interface VerifiedClient {
  clientId: string
  client: ClientRecord
  redirectUri: string
  /** The request's `state`, unless repeated: error redirects carry it. */
  state: string | undefined
  /**
   * The response mode errors are answered in: `form_post` when the request asks for it (once)
   * and the profile admits it, else `query` (an unknown or refused mode is reported by query).
   */
  responseMode: ResponseMode
}

/** What the caller knows of the request beyond its parameters. */
export interface RequestOrigin {
  /** The request was pushed (RFC 9126): at the PAR endpoint, or taken from its request_uri. */
  pushed: boolean
  /** The JWK thumbprint of the DPoP proof that came with the push (RFC 9449 §10.1). */
  dpopJkt?: string | undefined
}

const PROMPTS = new Set(['none', 'login', 'consent', 'select_account'])
/** RFC 9449 §10: base64url of a SHA-256 JWK thumbprint (RFC 7638), 43 characters. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/

function notVerified(code: OAuthErrorCode, description: string): OAuthError {
  // A page (or the PAR endpoint's JSON) with status 400, whatever the code's usual status.
  return new OAuthError(code, description, { status: 400 })
}

/**
 * 1–2: the client and its redirect_uri (the client already authenticated at the PAR endpoint is
 * `known`; `address`, the request's source, counts a metadata-document fetch against its budget). Throws an OAuthError: nothing is redirected before both are verified.
 */
export async function verifyClientAndRedirect(
  raw: RawParams,
  ctx: Context,
  known?: ClientRecord,
  address?: string,
): Promise<VerifiedClient> {
  const p = raw.values
  const clientId = p.get('client_id')
  if (clientId === undefined || raw.repeated.has('client_id')) {
    throw notVerified('invalid_request', 'client_id is missing or repeated')
  }
  const client = known ?? (await ctx.clients.get(clientId, address))
  if (!client) throw notVerified('invalid_client', 'the client is unknown')
  const redirectUri = p.get('redirect_uri')
  if (redirectUri === undefined || raw.repeated.has('redirect_uri')) {
    throw notVerified('invalid_request', 'redirect_uri is missing or repeated')
  }
  if (!client.redirectUris.includes(redirectUri)) {
    throw notVerified('invalid_request', 'redirect_uri is not registered for this client')
  }
  const state = raw.repeated.has('state') ? undefined : p.get('state')
  const formPost =
    !raw.repeated.has('response_mode') &&
    p.get('response_mode') === 'form_post' &&
    allowsResponseMode('form_post', ctx.config)
  return { clientId, client, redirectUri, state, responseMode: formPost ? 'form_post' : 'query' }
}

/** Checks 3–10 on a request of a verified client and redirect_uri; throws a {@link Refusal}. */
export async function parseAuthorizationRequest(
  raw: RawParams,
  verified: VerifiedClient,
  ctx: Context,
  origin: RequestOrigin,
): Promise<AuthorizationRequest> {
  const { clientId, client, redirectUri, state, responseMode } = verified
  const p = raw.values
  checkClient(client, ctx, origin)
  checkRequestForm(raw, ctx)
  const { scopes, resources } = grantedScopes(raw, client, ctx)
  const { codeChallenge, challengeMethod } = checkPkce(p, client, ctx)
  const { prompt, maxAge, hintSub } = await checkPromptAndHints(p, ctx)
  const dpopJkt = checkDpopJkt(p.get('dpop_jkt'), origin.dpopJkt)
  const extras = checkOpenIdParameters(p, client, ctx)
  const details = await parseAuthorizationDetails(p.get('authorization_details'), client, ctx).catch(toRefusal)
  const grantManagement = await parseGrantManagement(p, clientId, ctx).catch(toRefusal)
  return {
    clientId,
    redirectUri,
    scopes,
    prompt,
    ...(state !== undefined ? { state } : {}),
    ...(p.get('nonce') !== undefined ? { nonce: p.get('nonce') as string } : {}),
    ...(codeChallenge !== undefined ? { codeChallenge, codeChallengeMethod: challengeMethod } : {}),
    ...(maxAge !== undefined ? { maxAge } : {}),
    ...(responseMode !== 'query' ? { responseMode } : {}),
    ...extras,
    ...(hintSub !== undefined ? { idTokenHintSub: hintSub } : {}),
    ...(resources.length > 0 ? { resources } : {}),
    ...(dpopJkt !== undefined ? { dpopJkt } : {}),
    ...(details ? { authorizationDetails: details } : {}),
    ...grantManagement,
  }
}

/** An OAuthError of a check as a {@link Refusal} (redirected to the client). */
function toRefusal(err: unknown): never {
  throw err instanceof OAuthError ? new Refusal(err.code, err.message) : err
}

/**
 * 3: the client may use the authorization endpoint, the code grant and response_type code; the
 * profile admits it (FAPI 2.0 §5.3.2.1); and it pushed the request if it must (RFC 9126 §4).
 */
function checkClient(client: ClientRecord, ctx: Context, origin: RequestOrigin): void {
  for (const [permission, what] of [
    [Permissions.Endpoints.Authorization, 'the authorization endpoint'],
    [Permissions.GrantTypes.AuthorizationCode, 'the authorization code grant'],
    [Permissions.ResponseTypes.Code, 'response_type code'],
  ] as const) {
    if (!client.permissions.includes(permission))
      throw new Refusal('unauthorized_client', `the client may not use ${what}`)
  }
  const refusal = profileRefusal(client, ctx.config)
  if (refusal !== undefined) throw new Refusal('unauthorized_client', refusal)
  // RFC 9126 §4: where pushing is required, a request without a pushed request_uri is invalid_request.
  if (!origin.pushed && requiresPushedRequests(client, ctx.config))
    throw new Refusal('invalid_request', 'pushed authorization requests are required (use the PAR endpoint)')
}

/** 4–6: no request objects, response_type code in query or form_post mode, no repeated parameter. */
function checkRequestForm(raw: RawParams, ctx: Context): void {
  const p = raw.values
  // 4: request objects are not supported, and saying so beats ignoring them (Core §6).
  if (p.has('request')) throw new Refusal('request_not_supported', 'the request parameter is not supported')
  if (p.has('request_uri')) throw new Refusal('request_uri_not_supported', 'the request_uri parameter is not supported')
  // 5
  const responseType = p.get('response_type')
  if (responseType === undefined) throw new Refusal('invalid_request', 'response_type is required')
  if (responseType !== 'code') throw new Refusal('unsupported_response_type', 'only response_type code is supported')
  // Multiple Response Type Encoding Practices §2.1: an unsupported response_mode is an error.
  const responseMode = p.get('response_mode')
  if (responseMode !== undefined && responseMode !== 'query' && responseMode !== 'form_post')
    throw new Refusal('invalid_request', 'response_mode must be query or form_post')
  if (responseMode !== undefined && !allowsResponseMode(responseMode, ctx.config))
    throw new Refusal('invalid_request', `response_mode ${responseMode} is not allowed by the profile; use query`)
  // 6: RFC 6749 §3.1, parameters must not be included more than once.
  if (raw.repeated.size > 0)
    throw new Refusal('invalid_request', `${parameterName([...raw.repeated][0] ?? '')} is repeated`)
}

/** 7: the resources (RFC 8707) and the scopes granted: known, permitted, of those resources. */
function grantedScopes(raw: RawParams, client: ClientRecord, ctx: Context): { scopes: string[]; resources: string[] } {
  try {
    return requestedScopes(raw.values.get('scope'), raw.lists.get('resource') ?? [], client, ctx)
  } catch (err) {
    if (err instanceof OAuthError) throw new Refusal(err.code, err.message)
    throw err
  }
}

/**
 * The scopes and resources (RFC 8707) a request asks for, as the authorization endpoint grants them
 * (the device authorization endpoint too): each scope known and permitted (`scp:`), else
 * invalid_scope; each resource one the client may target, else invalid_target.
 */
export function requestedScopes(
  scope: string | undefined,
  resourceValues: readonly string[],
  client: ClientRecord,
  ctx: Context,
): { scopes: string[]; resources: string[] } {
  let scopes = parseScope(scope, ctx.config.limits.maxScopes)
  const resources = parseResources(resourceValues, client, ctx)
  // RFC 6749 §3.3: without scope, a request naming resources asks for the scopes of those resources
  // the client is permitted (MCP clients may send no scope); without either, scope is required.
  if (scopes.length === 0) scopes = defaultScopesForResources(client, resources, ctx)
  if (scopes.length === 0) throw new OAuthError('invalid_scope', 'scope is required')
  const granted: string[] = []
  for (const scope of scopes) {
    if (!ctx.scopes.get(scope)) throw new OAuthError('invalid_scope', 'scope contains an unknown scope')
    if (scope === 'offline_access') {
      // Core §11: offline_access is ignored unless the client may use refresh tokens.
      if (client.permissions.includes(Permissions.GrantTypes.RefreshToken)) granted.push(scope)
      continue
    }
    // Grant Management §6.1: these scopes are the client's own (its client credentials token), never an end-user's.
    if ((GRANT_MANAGEMENT_SCOPES as readonly string[]).includes(scope))
      throw new OAuthError('invalid_scope', 'the grant management scopes are for client credentials tokens only')
    if (!client.permissions.includes(scopePermission(scope)))
      throw new OAuthError('invalid_scope', 'scope contains a scope the client is not allowed')
    granted.push(scope)
  }
  // RFC 8707: with resources, the grant holds only the API scopes of those resources (plus identity
  // scopes and offline_access). A requested scope of another audience is dropped here, not only
  // from the access token: the code and refresh family are bound to the resources and could never
  // issue it, so the end-user is not asked to consent to it and no token response lists it.
  if (resources.length === 0) return { scopes: granted, resources }
  const kept = scopesForResources(granted, resources, ctx)
  if (kept.length === 0) throw new OAuthError('invalid_scope', 'scope names no scope of the requested resources')
  return { scopes: kept, resources }
}

/**
 * 8: PKCE (RFC 7636 §4.3, §4.4.1), required of public clients and wherever `requiresPkce` says;
 * `plain` only where `allowsPlainPkce` says (never under FAPI 2.0).
 */
function checkPkce(
  p: Map<string, string>,
  client: ClientRecord,
  ctx: Context,
): { codeChallenge: string | undefined; challengeMethod: 'S256' | 'plain' } {
  const codeChallenge = p.get('code_challenge')
  const method = p.get('code_challenge_method')
  if (codeChallenge === undefined) {
    if (method !== undefined) throw new Refusal('invalid_request', 'code_challenge_method without code_challenge')
    if (!isConfidential(client) || requiresPkce(client, ctx.config))
      throw new Refusal('invalid_request', 'PKCE (code_challenge) is required for this client')
  }
  const challengeMethod = method ?? 'plain' // RFC 7636 §4.3: absent means plain
  if (codeChallenge !== undefined) {
    if (challengeMethod !== 'S256' && challengeMethod !== 'plain')
      throw new Refusal('invalid_request', 'code_challenge_method must be S256')
    if (challengeMethod === 'plain' && !allowsPlainPkce(client, ctx.config))
      throw new Refusal('invalid_request', 'code_challenge_method plain is not allowed; use S256')
    if (!isValidChallenge(codeChallenge)) throw new Refusal('invalid_request', 'code_challenge is malformed')
  }
  return { codeChallenge, challengeMethod: challengeMethod as 'S256' | 'plain' }
}

/** 9: prompt, max_age and id_token_hint (OpenID Connect Core §3.1.2.1). */
async function checkPromptAndHints(
  p: Map<string, string>,
  ctx: Context,
): Promise<{ prompt: string[]; maxAge: number | undefined; hintSub: string | undefined }> {
  const prompt = (p.get('prompt') ?? '').split(' ').filter((value) => value !== '')
  for (const value of prompt)
    if (!PROMPTS.has(value)) throw new Refusal('invalid_request', 'prompt contains an unsupported value')
  if (prompt.includes('none') && prompt.length > 1)
    throw new Refusal('invalid_request', 'prompt=none cannot be combined with other values')
  let maxAge: number | undefined
  const rawMaxAge = p.get('max_age')
  if (rawMaxAge !== undefined) {
    if (!/^\d{1,10}$/.test(rawMaxAge)) throw new Refusal('invalid_request', 'max_age must be a non-negative integer')
    maxAge = Number(rawMaxAge)
  }
  let hintSub: string | undefined
  const hint = p.get('id_token_hint')
  if (hint !== undefined) {
    const claims = await verifyIdTokenHint(hint, ctx)
    if (!claims) throw new Refusal('invalid_request', 'id_token_hint is not a valid ID token of this issuer')
    hintSub = claims.sub
  }
  return { prompt, maxAge, hintSub }
}

/**
 * 10: the DPoP key the code is bound to (RFC 9449 §10): `dpop_jkt`, a base64url SHA-256 JWK
 * thumbprint, and the key of the pushed request's proof; when both are given they must match
 * (§10.1).
 */
function checkDpopJkt(param: string | undefined, proofJkt: string | undefined): string | undefined {
  if (param !== undefined && !THUMBPRINT.test(param)) {
    throw new Refusal('invalid_request', 'dpop_jkt must be a base64url SHA-256 JWK thumbprint')
  }
  if (param !== undefined && proofJkt !== undefined && param !== proofJkt) {
    throw new Refusal('invalid_request', 'dpop_jkt does not match the key of the DPoP proof')
  }
  return proofJkt ?? param
}

/**
 * 11: the OpenID Connect request parameters passed on to the sign-in (Core §3.1.2.1): login_hint,
 * ui_locales, claims_locales, display (page, popup, touch, wap), acr_values; and the claims
 * request (§5.5), whose JSON must parse (else invalid_request), without the claims of scopes the
 * client is not permitted (§5.4; #39 item 4): no consent page, hook or grant ever sees those.
 */
function checkOpenIdParameters(
  p: Map<string, string>,
  client: ClientRecord,
  ctx: Context,
): Partial<AuthorizationRequest> {
  const extras: Partial<AuthorizationRequest> = {}
  try {
    const claims = permittedClaims(parseClaimsParameter(p.get('claims')), client, ctx)
    if (claims !== undefined) extras.claims = claims
    const display = parseDisplay(p.get('display'))
    if (display !== undefined) extras.display = display
  } catch (err) {
    if (err instanceof OAuthError) throw new Refusal(err.code, err.message)
    throw err
  }
  const loginHint = p.get('login_hint')
  if (loginHint !== undefined) extras.loginHint = loginHint
  const uiLocales = p.get('ui_locales')
  if (uiLocales !== undefined) extras.uiLocales = uiLocales
  const claimsLocales = p.get('claims_locales')
  if (claimsLocales !== undefined) extras.claimsLocales = claimsLocales
  const acrValues = p.get('acr_values')
  if (acrValues !== undefined) extras.acrValues = acrValues
  return extras
}
