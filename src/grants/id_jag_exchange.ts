/**
 * @module grants/id_jag_exchange
 * The identity provider's side of Identity Assertion JWT Authorization Grants (#45,
 * draft-ietf-oauth-identity-assertion-authz-grant §4.3): a token exchange (RFC 8693) with
 * `requested_token_type=urn:ietf:params:oauth:token-type:id-jag` trades an ID token this service
 * issued to the requesting client for an ID-JAG, a short-lived JWT the client presents at another
 * authorization server (the `audience`) with the JWT bearer grant (RFC 7523).
 * Threat model: docs/security.md "ID-JAGs (identity provider side)".
 * - the subject token is an ID token (`subject_token_type` id_token; an access token or anything
 *   else is invalid_request), verified as token exchange verifies ID token subjects (hardening round
 *   3: this issuer's, unexpired, its grant alive and its session too) and issued to the requesting
 *   client itself (draft §4.3: its audience is the authenticated client; no `idTokenSubjects` pair
 *   counts); no actor token (invalid_request)
 * - `audience`: exactly one (else invalid_request), the issuer of an `identityAssertion.audiences`
 *   entry whose `client` is the requesting client (#45 review item 1: never another client's
 *   entry, whose `clientId` names that client at the target), else invalid_target (RFC 8693
 *   §2.2.2: the server is unwilling to issue a token for the target; the same description as an
 *   unknown audience)
 * - `resource`: at most one absolute URI without a fragment, one of the audience's `resources`
 *   when it lists them (else invalid_target)
 * - `scope`: within the audience's `scopes` (else invalid_scope); none requested: all of them
 * - the account still exists (invalid_request); the host's `tokenExchange.authorize` (#45 review
 *   item 2: asked as for any exchange, `requestedTokenType` id-jag; false is invalid_request) and
 *   then `identityAssertion.authorize` (false is access_denied) may each refuse or narrow the scopes;
 *   both must allow
 * - the ID-JAG: `typ` oauth-id-jag+jwt, signed with the ID token key; iss, sub, aud (the target
 *   issuer), client_id (the client's id there), jti, iat, exp, scope, resource, auth_time, and
 *   `email` when the user's grant at the requesting client holds the `email` scope
 * - lifetime `identityAssertion.lifetime` (300 s), never past the ID token or its grant
 * - response: access_token (the ID-JAG), issued_token_type id-jag, token_type N_A (RFC 8693
 *   §2.2.1: not an access token), expires_in, scope; never a refresh token
 */
import type { ClientRecord } from '../storage/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { allValues, type Params } from '../http.ts'
import { randomToken, signJwt } from '../crypto/index.ts'
import { metaOf } from '../security/index.ts'
import {
  applyExchangePolicy,
  type IdentityAssertionAudience,
  type IdentityAssertionRequest,
  isResourceIndicator,
  parseScope,
  TokenTypes,
} from '../config/index.ts'
import { type ExchangeParty, publicParty, readExchangeToken } from './token_exchange_subject.ts'
import { touchGrant } from './grant_update.ts'
import type { TokenResponse } from './types.ts'

/** The token type of an ID-JAG (draft §3, §9: `requested_token_type` and `issued_token_type`). */
export const ID_JAG_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id-jag'
/** The JWT `typ` of an ID-JAG (draft §3: explicit typing, RFC 8725 §3.11). */
export const ID_JAG_JWT_TYPE = 'oauth-id-jag+jwt'

/** The one target authorization server of the request: the requesting client's configured entry for it. */
function targetAudience(params: Params, client: ClientRecord, ctx: Context): IdentityAssertionAudience {
  const asked = allValues(params, 'audience')
  if (asked.length !== 1) {
    throw new OAuthError('invalid_request', 'an ID-JAG needs exactly one audience: the target issuer')
  }
  const audience = ctx.config.identityAssertion.audiences.find(
    (entry) => entry.issuer === asked[0] && entry.client === client.clientId,
  )
  if (!audience)
    throw new OAuthError(
      'invalid_target',
      'the audience is not an authorization server this client may get ID-JAGs for',
    )
  return audience
}

/** The request's resource (RFC 8707), at most one, and one of the audience's when it lists them. */
function targetResource(params: Params, audience: IdentityAssertionAudience): string | undefined {
  const asked = allValues(params, 'resource')
  if (asked.length === 0) return undefined
  const resource = asked[0] as string
  if (asked.length > 1) throw new OAuthError('invalid_target', 'an ID-JAG names at most one resource')
  if (!isResourceIndicator(resource)) {
    throw new OAuthError('invalid_target', 'resource must be an absolute URI without a fragment')
  }
  if (audience.resources !== undefined && audience.resources.length > 0 && !audience.resources.includes(resource)) {
    throw new OAuthError('invalid_target', 'the resource is not one ID-JAGs for this audience may name')
  }
  return resource
}

/** The requested scopes, each one the audience allows; none requested: all it allows. */
function targetScopes(params: Params, audience: IdentityAssertionAudience, ctx: Context): string[] {
  const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
  for (const scope of requested) {
    if (!audience.scopes.includes(scope)) {
      throw new OAuthError('invalid_scope', 'scope is outside what ID-JAGs for this audience may carry')
    }
  }
  return requested.length > 0 ? requested : [...audience.scopes]
}

/**
 * The subject: an ID token (and nothing else) issued to the requesting client, verified by token
 * exchange's rules; no actor token.
 */
async function idTokenSubject(params: Params, client: ClientRecord, ctx: Context): Promise<ExchangeParty> {
  if (params.get('actor_token') !== undefined || params.get('actor_token_type') !== undefined) {
    throw new OAuthError('invalid_request', 'an ID-JAG is issued without an actor token')
  }
  const type = params.get('subject_token_type')
  if (type !== undefined && type !== TokenTypes.IdToken) {
    throw new OAuthError('invalid_request', 'an ID-JAG is issued for an ID token (subject_token_type id_token)')
  }
  const subject = (await readExchangeToken(params, 'subject', client, ctx)) as ExchangeParty
  if (subject.clientId !== client.clientId) {
    throw new OAuthError('invalid_request', 'the subject_token is an ID token issued to another client')
  }
  return subject
}

/** The account's claims the ID-JAG may carry: `email` only with the grant's `email` scope. */
async function accountClaims(subject: ExchangeParty, ctx: Context): Promise<Record<string, unknown>> {
  const scopes = subject.scope?.includes('email') ? ['email'] : []
  const account = await ctx.accounts.findAccount(subject.sub, { use: 'id_token', scopes, claims: [] })
  if (!account) throw new OAuthError('invalid_request', 'the end-user of the subject_token no longer exists')
  return scopes.length > 0 && typeof account.email === 'string' ? { email: account.email } : {}
}

/**
 * #45 review item 2: the host's `tokenExchange.authorize`, asked as for any exchange (the subject
 * the ID token, no actor, `act` the client, `audience` the target issuer, the ID-JAG's `resource`):
 * false refuses (access_denied, as the issue's policy refusals), narrowing holds (the target narrowed
 * away is invalid_target).
 */
async function applyExchangeHook(
  subject: ExchangeParty,
  client: ClientRecord,
  request: IdentityAssertionRequest,
  ctx: Context,
): Promise<string[]> {
  if (!ctx.config.tokenExchange?.authorize) return request.scopes
  const granted = await applyExchangePolicy(ctx.config.tokenExchange, {
    requestedTokenType: 'id-jag',
    clientId: client.clientId,
    subject: publicParty(subject),
    act: { sub: client.clientId },
    scope: request.scopes,
    audience: [request.audience],
    ...(request.resource !== undefined ? { resource: request.resource } : {}),
  }).catch((err: unknown) => {
    // #45: a policy refusal of an ID-JAG is access_denied, as identityAssertion.authorize's.
    if (err instanceof OAuthError && err.code === 'invalid_request') {
      throw new OAuthError('access_denied', 'the ID-JAG was refused by policy')
    }
    throw err
  })
  return granted.scope
}

/**
 * The host's policy: `tokenExchange.authorize` first, then `identityAssertion.authorize` on what
 * it left (false refuses, `{ scopes }` narrows); both must allow.
 */
async function applyPolicy(
  subject: ExchangeParty,
  client: ClientRecord,
  asked: IdentityAssertionRequest,
  ctx: Context,
): Promise<string[]> {
  const request = { ...asked, scopes: await applyExchangeHook(subject, client, asked, ctx) }
  const hook = ctx.config.identityAssertion.authorize
  if (!hook) return request.scopes
  const decision = await hook(request)
  if (decision === false) throw new OAuthError('access_denied', 'the ID-JAG was refused by policy')
  if (decision === true || decision === undefined || decision.scopes === undefined) return request.scopes
  const kept = request.scopes.filter((scope) => decision.scopes?.includes(scope))
  if (kept.length === 0) throw new OAuthError('invalid_scope', 'no scope of the ID-JAG is permitted by policy')
  return kept
}

/** Issues an ID-JAG for the token exchange request (see the module comment). */
export async function issueIdJag(
  params: Params,
  client: ClientRecord,
  request: Request,
  ctx: Context,
): Promise<TokenResponse> {
  const subject = await idTokenSubject(params, client, ctx)
  const audience = targetAudience(params, client, ctx)
  const resource = targetResource(params, audience)
  const requested = targetScopes(params, audience, ctx)
  const claims = await accountClaims(subject, ctx)
  const scopes = await applyPolicy(
    subject,
    client,
    {
      sub: subject.sub,
      clientId: client.clientId,
      audience: audience.issuer,
      scopes: requested,
      ...(resource !== undefined ? { resource } : {}),
    },
    ctx,
  )
  const now = ctx.now()
  const ttl = Math.min(ctx.config.identityAssertion.lifetime, subject.exp - now)
  const scope = scopes.join(' ')
  const jti = randomToken(16)
  const payload: Record<string, unknown> = {
    ...claims,
    iss: ctx.config.issuer,
    sub: subject.sub,
    aud: audience.issuer,
    client_id: audience.clientId,
    jti,
    iat: now,
    exp: now + ttl,
    scope,
    ...(resource !== undefined ? { resource } : {}),
    ...(subject.authTime !== undefined ? { auth_time: subject.authTime } : {}),
  }
  // The ID token's grant was read: its last use is recorded (to the minute) while signing.
  const used = subject.grantUsedAt !== undefined && touchGrant(subject.gid as string, subject.grantUsedAt, now, ctx)
  const token = await signJwt(payload, ID_JAG_JWT_TYPE, await ctx.keyring.signingKey(ctx.config.idTokenSigningAlg))
  await used
  if (ctx.emit.active) {
    ctx.emit(metaOf(request), {
      type: 'identity_assertion.issued',
      clientId: client.clientId,
      sub: subject.sub,
      audience: audience.issuer,
      jti,
      scope,
      ...(resource !== undefined ? { resource } : {}),
      ...(subject.gid !== undefined ? { grantId: subject.gid } : {}),
    })
  }
  return { access_token: token, issued_token_type: ID_JAG_TOKEN_TYPE, token_type: 'N_A', expires_in: ttl, scope }
}
