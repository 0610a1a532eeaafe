/**
 * @module grants/jwt_bearer
 * The JWT bearer grant (RFC 7523 §2.1) with an Identity Assertion JWT Authorization Grant
 * (draft-ietf-oauth-identity-assertion-authz-grant §4.3, MCP enterprise-managed authorization):
 * the enterprise identity provider vouches for its user and for the client; this service, the
 * resource's authorization server, issues an access token with no interaction.
 * Threat model: docs/security.md "Identity assertion grants" (#45).
 * - offered only while `identityAssertion.issuers` names an identity provider (else the
 *   grant_type is unsupported); the client needs `gt:urn:ietf:params:oauth:grant-type:jwt-bearer`
 * - `assertion` required (invalid_request); verified by `verifyIdJag` (id_jag.ts), each failure
 *   invalid_grant
 * - the ID-JAG's `resource`, when present, each a resource of this server (an API scope's
 *   audience), else invalid_grant; the request's `resource` (RFC 8707) each one the client may
 *   target and, when the ID-JAG names resources, one of them, else invalid_target; none
 *   requested: the ID-JAG's
 * - scope = the ID-JAG's `scope` ∩ the client's `scp:` permissions (known scopes, never
 *   `offline_access` nor `openid`) ∩ the request's `scope` when sent (a requested scope outside it
 *   is invalid_scope); nothing left is invalid_scope
 * - never an ID token: nobody authenticated here, and RFC 7523 §2.1 grants an access token; so
 *   `openid` is not granted, and a refresh of the grant (opt-in) cannot issue one either
 * - the account: the host's `identityAssertion.findAccount`, else the issuer's `accountClaim`
 *   (`email`, the built-in user with that email; `sub`); it must exist, else invalid_grant. An
 *   `email_verified` of false (or "false") never maps by email (#45 review item 5): invalid_grant
 *   with `accountClaim` email, and the hook's `email` is left out (its `claims` keep both)
 * - the `jti` is used once per issuer (`store.replays.use`, atomic on every store), else
 *   invalid_grant; recorded last, so a refusal above leaves the ID-JAG usable
 * - the access token: `sub` the account, `client_id` the client, `aud` the resources (else the
 *   scopes' audiences), `auth_time` the ID-JAG's; bound to a DPoP proof's key when one was sent
 * - no refresh token (the client presents a new ID-JAG), unless the host opts in
 *   (`identityAssertion.refreshTokens`, see jwt_bearer_refresh.ts)
 * - audit event `token.issued` naming the identity provider (`assertionIssuer`)
 */
import type { ClientRecord } from '../storage/index.ts'
import type { DpopProof } from '../dpop/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { allValues } from '../http.ts'
import { Permissions, scopePermission } from '../clients/index.ts'
import { parseScope } from '../config/index.ts'
import { metaOf } from '../security/index.ts'
import { sha256 } from '../crypto/index.ts'
import { parseResources, scopesForResources } from '../protocol/index.ts'
import { issueAccessToken } from '../tokens/index.ts'
import { ID_JAG_CLOCK_SKEW, type VerifiedIdJag, verifyIdJag } from './id_jag.ts'
import { type JwtBearerTarget, issueWithRefresh, offersRefresh } from './jwt_bearer_refresh.ts'
import type { Grant, TokenResponse } from './types.ts'

/** The grant type (RFC 7523 §2.1). */
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

/** Whether `resource` is a resource of this server: the audience of a configured scope. */
function isServedResource(resource: string, ctx: Context): boolean {
  return ctx.scopes.names().some((name) => ctx.scopes.get(name)?.audience === resource)
}

/** The token's resources: the request's within the ID-JAG's (see the module comment). */
function assertionResources(
  values: readonly string[],
  named: readonly string[],
  client: ClientRecord,
  ctx: Context,
): string[] {
  if (!named.every((resource) => isServedResource(resource, ctx))) {
    throw new OAuthError('invalid_grant', 'the assertion names a resource this server does not serve')
  }
  const requested = parseResources(values, client, ctx)
  if (named.length === 0) return requested
  if (requested.length === 0) return parseResources(named, client, ctx)
  if (requested.some((resource) => !named.includes(resource))) {
    throw new OAuthError('invalid_target', 'resource is not a resource of the assertion')
  }
  return requested
}

/** The scopes: the ID-JAG's ∩ the client's permissions ∩ the request's (see the module comment). */
function assertionScopes(
  requested: readonly string[],
  granted: readonly string[],
  client: ClientRecord,
  ctx: Context,
): string[] {
  // No ID token (see the module comment): `openid` is never granted; `offline_access` is the grant's own.
  const available = granted.filter(
    (scope) =>
      scope !== 'offline_access' &&
      scope !== 'openid' &&
      ctx.scopes.get(scope) !== undefined &&
      client.permissions.includes(scopePermission(scope)),
  )
  for (const scope of requested) {
    if (!available.includes(scope)) {
      throw new OAuthError('invalid_scope', "scope is outside the assertion's scope or the client's scopes")
    }
  }
  return requested.length > 0 ? [...requested] : available
}

/** The account here of the ID-JAG's user (see the module comment), else invalid_grant. */
async function resolveAccount(jag: VerifiedIdJag, ctx: Context): Promise<Record<string, unknown> & { sub: string }> {
  const { claims, issuer } = jag
  // #45 review item 5: an email its issuer marks unverified identifies nobody.
  const unverified = claims.email_verified === false || claims.email_verified === 'false'
  const email = typeof claims.email === 'string' && claims.email !== '' && !unverified ? claims.email : undefined
  const hook = ctx.config.identityAssertion?.findAccount
  let sub: string | undefined
  if (hook) {
    sub = await hook({ issuer: issuer.issuer, sub: claims.sub, ...(email ? { email } : {}), claims: { ...claims } })
  } else if (issuer.accountClaim === 'sub') {
    sub = claims.sub
  } else {
    if (unverified) throw new OAuthError('invalid_grant', "the assertion's email is not verified")
    if (email === undefined)
      throw new OAuthError('invalid_grant', 'the assertion carries no email to find the account by')
    sub = ctx.users.subOfEmail(email)
  }
  const account =
    typeof sub === 'string' && sub !== ''
      ? await ctx.accounts.findAccount(sub, { use: 'id_token', scopes: [], claims: [] })
      : undefined
  if (!account) throw new OAuthError('invalid_grant', "the assertion's user has no account here")
  return { ...account, sub: sub as string }
}

/**
 * RFC 7523 §3 item 7: one use per `jti` of an issuer, kept until the ID-JAG expires (plus the
 * skew): at most an hour and twice the skew, as `verifyIdJag` refuses a later `exp`.
 */
async function useOnce(jag: VerifiedIdJag, ctx: Context): Promise<void> {
  const key = `idjag:${await sha256(`${jag.issuer.issuer} ${jag.claims.jti}`)}`
  if (!(await ctx.store.replays.use(key, Math.ceil(jag.claims.exp) + ID_JAG_CLOCK_SKEW, ctx.now()))) {
    throw new OAuthError('invalid_grant', 'the assertion has already been used')
  }
}

/** The default: an access token alone, of no recorded grant (a new one needs a new ID-JAG). */
async function issueAccessOnly(
  target: JwtBearerTarget,
  client: ClientRecord,
  ctx: Context,
  proof: DpopProof | undefined,
): Promise<{ response: TokenResponse; jti: string; grantId?: undefined }> {
  const { scopes, resources } = target
  const audience = resources.length > 0 ? resources : ctx.scopes.audiences(scopes)
  const ttl = client.lifetimes.accessToken ?? ctx.config.accessTokenTtl
  const issued = await issueAccessToken(
    {
      issuer: ctx.config.issuer,
      sub: target.sub,
      audience: audience.length > 0 ? audience : [ctx.config.issuer],
      clientId: client.clientId,
      scope: scopes.join(' '),
      now: ctx.now(),
      ttl,
      ...(target.authTime !== undefined ? { authTime: target.authTime } : {}),
      // RFC 9449 §6.1: bound to the proof's key.
      ...(proof ? { jkt: proof.jkt } : {}),
    },
    await ctx.keyring.signingKey(ctx.config.accessTokenSigningAlg),
  )
  const response: TokenResponse = {
    access_token: issued.token,
    token_type: proof ? 'DPoP' : 'Bearer',
    expires_in: ttl,
    scope: scopes.join(' '),
  }
  return { response, jti: String(issued.claims.jti) }
}

export const jwtBearer: Grant = {
  type: JWT_BEARER,
  permission: Permissions.GrantTypes.JwtBearer,
  // draft §4.3 and MCP: the client may be public (the ID-JAG names it, and is one-time).
  allowPublic: true,
  isOffered: (ctx) => (ctx.config.identityAssertion?.issuers?.length ?? 0) > 0,
  async handle(params, { client, request }, ctx, proof) {
    const assertion = params.get('assertion')
    if (assertion === undefined) throw new OAuthError('invalid_request', 'assertion is required')
    const jag = await verifyIdJag(assertion, client.clientId, ctx)
    const requested = parseScope(params.get('scope'), ctx.config.limits.maxScopes)
    const resources = assertionResources(allValues(params, 'resource'), jag.resources, client, ctx)
    const scopes = scopesForResources(assertionScopes(requested, jag.scopes, client, ctx), resources, ctx)
    if (scopes.length === 0)
      throw new OAuthError('invalid_scope', 'no scope of the assertion is permitted to the client')
    const account = await resolveAccount(jag, ctx)
    await useOnce(jag, ctx)
    const authTime = typeof jag.claims.auth_time === 'number' ? jag.claims.auth_time : undefined
    const offline = jag.scopes.includes('offline_access')
    const target: JwtBearerTarget = {
      scopes,
      resources,
      sub: account.sub,
      offline,
      ...(authTime !== undefined ? { authTime } : {}),
    }
    const { response, jti, grantId } = offersRefresh(client, jag.scopes, ctx)
      ? await issueWithRefresh(target, account, client, ctx, proof)
      : await issueAccessOnly(target, client, ctx, proof)
    ctx.emit(metaOf(request), {
      type: 'token.issued',
      grantType: JWT_BEARER,
      clientId: client.clientId,
      sub: account.sub,
      jti,
      scope: scopes.join(' '),
      assertionIssuer: jag.issuer.issuer,
      ...(grantId !== undefined ? { grantId } : {}),
    })
    return response
  },
}
