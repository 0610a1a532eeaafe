/**
 * @module endpoints/introspection
 * Token introspection, POST /connect/introspect (RFC 7662).
 *
 * Policy: a caller learns about a token only if it was issued to the caller (`client_id`) or the
 * caller's client id is one of the token's audiences (a resource server registered as a client
 * with the id of its API scope's audience). Refresh tokens are visible to their own client only.
 * Every other token, and anything expired, revoked, foreign or malformed, is `{"active":false}`.
 *
 * A DPoP-bound access token is answered with `cnf.jkt` (RFC 9449 §6.2) and `token_type` DPoP
 * (§6.2: "If the token_type member is included ... it MUST contain the value DPoP"); the binding
 * itself is not checked here (the resource server checks it against the proof it received).
 */
import { metaOf } from '../security/index.ts'
import { authenticateClient, requirePermission } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import { noStoreJson, readForm } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { looksLikeJwt } from '../tokens/index.ts'
import { findActiveAccessToken } from '../protocol/index.ts'

const INACTIVE = { active: false } as const

function audiences(aud: string | string[]): string[] {
  return Array.isArray(aud) ? aud : [aud]
}

/** An active token's introspection response, and the ids its audit event names. */
interface Found {
  body: Record<string, unknown> & { sub: string }
  grantId?: string
  jti?: string
}

async function introspectAccessToken(token: string, caller: ClientRecord, ctx: Context): Promise<Found | undefined> {
  const claims = await findActiveAccessToken(token, ctx)
  if (!claims) return undefined
  if (claims.client_id !== caller.clientId && !audiences(claims.aud).includes(caller.clientId)) return undefined
  return {
    body: {
      active: true,
      scope: claims.scope,
      client_id: claims.client_id,
      sub: claims.sub,
      exp: claims.exp,
      iat: claims.iat,
      iss: claims.iss,
      aud: claims.aud,
      jti: claims.jti,
      token_type: claims.cnf ? 'DPoP' : 'Bearer',
      ...(claims.auth_time !== undefined ? { auth_time: claims.auth_time } : {}),
      ...(claims.gty !== undefined ? { gty: claims.gty } : {}),
      ...(claims.cnf ? { cnf: { jkt: claims.cnf.jkt } } : {}),
      // RFC 8693 §2.1: the actor (and prior actors) of an exchanged token.
      ...(claims.act !== undefined ? { act: claims.act } : {}),
      // RFC 9396 §9.2: the authorization details the token is for.
      ...(claims.authorization_details ? { authorization_details: claims.authorization_details } : {}),
    },
    jti: claims.jti,
    ...(claims.gid !== undefined ? { grantId: claims.gid } : {}),
  }
}

async function introspectRefreshToken(token: string, caller: ClientRecord, ctx: Context): Promise<Found | undefined> {
  const record = await ctx.store.refreshTokens.get(await ctx.sha256(token))
  const now = ctx.now()
  if (!record || record.consumedAt !== undefined || record.expiresAt <= now) return undefined
  if (record.clientId !== caller.clientId) return undefined
  if (await ctx.store.revocations.isFamilyRevoked(record.familyId)) return undefined
  return {
    body: {
      active: true,
      scope: record.scope,
      client_id: record.clientId,
      sub: record.sub,
      exp: record.expiresAt,
      iat: record.issuedAt,
      iss: ctx.config.issuer,
      token_type: 'refresh_token',
      ...(record.authorizationDetails ? { authorization_details: record.authorizationDetails } : {}),
    },
    grantId: record.familyId,
  }
}

export async function handleIntrospection(request: Request, ctx: Context): Promise<Response> {
  const params = await readForm(request, ctx.config.limits)
  const { client } = await authenticateClient(request, params, ctx, { allowPublic: false })
  requirePermission(client, Permissions.Endpoints.Introspection, 'the introspection endpoint')
  const token = params.get('token')
  if (token === undefined) throw new OAuthError('invalid_request', 'token is required')
  // RFC 7662 §2.1: the hint only orders the search; a wrong hint still finds the token.
  const jwtFirst = params.get('token_type_hint') !== 'refresh_token' && looksLikeJwt(token)
  const found = jwtFirst
    ? ((await introspectAccessToken(token, client, ctx)) ?? (await introspectRefreshToken(token, client, ctx)))
    : ((await introspectRefreshToken(token, client, ctx)) ??
      (looksLikeJwt(token) ? await introspectAccessToken(token, client, ctx) : undefined))
  if (ctx.emit.active) {
    ctx.emit(metaOf(request), {
      type: 'token.introspected',
      clientId: client.clientId,
      active: found !== undefined,
      ...(found ? { sub: found.body.sub } : {}),
      ...(found?.jti !== undefined ? { jti: found.jti } : {}),
      ...(found?.grantId !== undefined ? { grantId: found.grantId } : {}),
    })
  }
  return noStoreJson(found?.body ?? INACTIVE)
}
