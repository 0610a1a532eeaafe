/**
 * @module endpoints/token
 * The token endpoint, POST /connect/token (RFC 6749 §3.2), as named steps:
 * parse the form, check grant_type, check the DPoP proof if one was sent (RFC 9449 §5; before
 * client authentication, so a nonce round trip costs none), authenticate the client, check
 * permissions and that a client that must use DPoP sent a proof, run the grant (which binds its
 * tokens to the proof's key). Without a `DPoP` header the only DPoP cost is one header lookup.
 */
import { authenticateClient, requirePermission } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import { checkProofRequired, nextNonce, tokenRequestProof } from '../dpop/index.ts'
import { OAuthError } from '../errors.ts'
import {
  authorizationCode,
  ciba,
  clientCredentials,
  deviceCode,
  type Grant,
  jwtBearer,
  PLAIN_ACCESS_TOKEN,
  type TokenResponse,
  refreshToken,
  tokenExchange,
} from '../grants/index.ts'
import { noStoreJsonText, readForm } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import { RESOURCE_PARAMETERS } from '../protocol/index.ts'

/** Parameters that may repeat: `resource` (RFC 8707 §2) and token exchange's `audience` (RFC 8693 §2.1). */
const MULTI_VALUED: ReadonlySet<string> = new Set([...RESOURCE_PARAMETERS, 'audience'])

/** The grants the token endpoint dispatches to. */
export const GRANTS: ReadonlyMap<string, Grant> = new Map(
  [authorizationCode, refreshToken, clientCredentials, tokenExchange, deviceCode, ciba, jwtBearer].map((grant) => [
    grant.type,
    grant,
  ]),
)

/** A character JSON would escape or a base64url token never holds: anything but `[A-Za-z0-9_.-]`. */
const NOT_TOKEN_CHARACTER = /[^\w.-]/

/**
 * The JSON of a token response (RFC 6749 §5.1), exactly `JSON.stringify(body)`. The usual answer
 * (client_credentials: access_token, token_type, expires_in, in that order, a token of base64url
 * segments and dots, an integer lifetime) is filled into a skeleton: JSON.stringify would scan the
 * token's ~500 characters for escapes and build the object's JSON member by member, ~1 µs more per
 * request (#44 item 4). The token is scanned once for such characters, unless the grant marked it
 * a compact JWS it signed (`PLAIN_ACCESS_TOKEN`). Any other shape goes through JSON.stringify.
 */
export function tokenResponseText(body: TokenResponse): string {
  const keys = Object.keys(body)
  const { access_token: token, token_type: type, expires_in: expiresIn } = body
  if (
    keys.length === 3 &&
    keys[0] === 'access_token' &&
    keys[1] === 'token_type' &&
    keys[2] === 'expires_in' &&
    typeof token === 'string' &&
    (type === 'Bearer' || type === 'DPoP' || type === 'N_A') &&
    Number.isSafeInteger(expiresIn) &&
    (body[PLAIN_ACCESS_TOKEN] === true || !NOT_TOKEN_CHARACTER.test(token))
  ) {
    return `{"access_token":"${token}","token_type":"${type}","expires_in":${expiresIn}}`
  }
  return JSON.stringify(body)
}

export async function handleToken(request: Request, ctx: Context): Promise<Response> {
  // RFC 8707 §2, RFC 8693 §2.1: `resource` and `audience` may repeat; any other repeated
  // parameter is invalid_request.
  const params = await readForm(request, ctx.config.limits, MULTI_VALUED)
  const grantType = params.get('grant_type')
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required')
  const grant = GRANTS.get(grantType)
  if (!grant || grant.isOffered?.(ctx) === false) {
    throw new OAuthError('unsupported_grant_type', 'grant_type is not supported')
  }
  const checking = tokenRequestProof(request, ctx)
  const proof = checking === undefined ? undefined : await checking
  const auth = await authenticateClient(request, params, ctx, { allowPublic: grant.allowPublic })
  requirePermission(auth.client, Permissions.Endpoints.Token, 'the token endpoint')
  requirePermission(auth.client, grant.permission, `the ${grant.type} grant`)
  checkProofRequired(auth.client, proof, ctx)
  // Self-registered clients: last use, written at most once a day (pruning of unused ones).
  if (auth.client.registration) ctx.clients.touch(auth.client)
  const response = noStoreJsonText(tokenResponseText(await grant.handle(params, auth, ctx, proof)))
  const nonce = nextNonce(proof, ctx)
  if (nonce !== undefined) response.headers.set('dpop-nonce', await nonce)
  return response
}
