/**
 * @module protocol/claims_request
 * The `claims` request parameter (OpenID Connect Core §5.5): which end-user claims the client asks
 * for at userinfo and in the ID token, beyond those of its scopes; and the `display` parameter
 * (§3.1.2.1). Only the claim names are kept: `essential`, `value` and `values` do not change what
 * is released (§5.5.1: an essential claim the end-user does not have is simply absent). A claim
 * that a scope releases may be asked for only by a client permitted that scope (`permittedClaims`).
 */
import * as v from 'valibot'
import type { ClientRecord, RequestedClaims } from '../storage/index.ts'

export type { RequestedClaims }
import { scopePermission } from '../clients/index.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'

/** Core §5.5.1: `null`, or an object with optional `essential`, `value`, `values` (others ignored). */
const ClaimRequestSchema = v.nullable(
  v.looseObject({
    essential: v.optional(v.boolean()),
    value: v.optional(v.unknown()),
    values: v.optional(v.array(v.unknown())),
  }),
)

/** At most this many claims per member: a request beyond it is not a real client's. */
const MAX_CLAIMS = 100

const MemberSchema = v.optional(
  v.pipe(
    v.record(v.pipe(v.string(), v.minLength(1), v.maxLength(255)), ClaimRequestSchema),
    v.check((record) => Object.keys(record).length <= MAX_CLAIMS, `at most ${MAX_CLAIMS} claims`),
  ),
)

/** Core §5.5: a JSON object with optional `userinfo` and `id_token` members; others are ignored. */
const ClaimsParameterSchema = v.looseObject({ userinfo: MemberSchema, id_token: MemberSchema })

/** An array where the claims request has objects (valibot's object and record schemas take arrays). */
function hasArrayForObject(json: unknown): boolean {
  if (Array.isArray(json)) return true
  if (json === null || typeof json !== 'object') return false
  for (const member of ['userinfo', 'id_token']) {
    const requests = (json as Record<string, unknown>)[member]
    if (Array.isArray(requests)) return true
    if (requests !== null && typeof requests === 'object' && Object.values(requests).some(Array.isArray)) return true
  }
  return false
}

/**
 * Parses the `claims` parameter (Core §5.5): JSON that is not an object of `userinfo` / `id_token`
 * claim requests is invalid_request. Returns undefined when nothing is requested.
 *
 * @see https://openid.net/specs/openid-connect-core-1_0.html#ClaimsParameter
 */
export function parseClaimsParameter(value: string | undefined): RequestedClaims | undefined {
  if (value === undefined) return undefined
  let json: unknown
  try {
    json = JSON.parse(value)
  } catch {
    throw new OAuthError('invalid_request', 'claims is not valid JSON')
  }
  const result = v.safeParse(ClaimsParameterSchema, json)
  if (!result.success || hasArrayForObject(json))
    throw new OAuthError('invalid_request', 'claims is not a valid claims request object')
  const requested: RequestedClaims = {}
  const userinfo = Object.keys(result.output.userinfo ?? {})
  const idToken = Object.keys(result.output.id_token ?? {})
  if (userinfo.length > 0) requested.userinfo = userinfo
  if (idToken.length > 0) requested.id_token = idToken
  return requested.userinfo || requested.id_token ? requested : undefined
}

/** Core §3.1.2.1: how the sign-in should be displayed. */
export type Display = 'page' | 'popup' | 'touch' | 'wap'
const DISPLAYS: ReadonlySet<string> = new Set(['page', 'popup', 'touch', 'wap'])

/** Parses `display` (Core §3.1.2.1): one of page, popup, touch, wap, else invalid_request. */
export function parseDisplay(value: string | undefined): Display | undefined {
  if (value === undefined) return undefined
  if (!DISPLAYS.has(value)) throw new OAuthError('invalid_request', 'display must be page, popup, touch or wap')
  return value as Display
}

/** Every claim name of a claims request, userinfo and ID token together. */
export function requestedClaimNames(requested: RequestedClaims | undefined): string[] {
  return [...new Set([...(requested?.userinfo ?? []), ...(requested?.id_token ?? [])])]
}

/**
 * The claims request narrowed to what the end-user agreed to: the names in `allowed` (claims
 * released by the granted scopes, or approved on their own). Undefined when nothing is left.
 */
export function approvedClaims(
  requested: RequestedClaims | undefined,
  allowed: (name: string) => boolean,
): RequestedClaims | undefined {
  if (!requested) return undefined
  const result: RequestedClaims = {}
  const userinfo = requested.userinfo?.filter(allowed) ?? []
  const idToken = requested.id_token?.filter(allowed) ?? []
  if (userinfo.length > 0) result.userinfo = userinfo
  if (idToken.length > 0) result.id_token = idToken
  return result.userinfo || result.id_token ? result : undefined
}

/**
 * Whether the client may ask for `name` with the claims parameter: a claim that identity scopes
 * release (Core §5.4: `email` of `email`, `address` of `address`, a configured scope's claims)
 * only when it is permitted (`scp:`) one of those scopes, as it would have to be to request the
 * scope itself. `sub` and claims no scope releases keep their own rules.
 */
export function isPermittedClaim(
  name: string,
  client: Pick<ClientRecord, 'permissions'>,
  ctx: Pick<Context, 'scopes'>,
): boolean {
  if (name === 'sub') return true // the subject: in every ID token and userinfo answer (Core §2, §5.3.2)
  const scopes = ctx.scopes.scopesOf(name)
  return scopes.length === 0 || scopes.some((scope) => client.permissions.includes(scopePermission(scope)))
}

/**
 * The claims request narrowed to the claims the client may ask for ({@link isPermittedClaim}), read
 * with its permissions of now: when the request is made and again whenever a grant releases
 * claims (code redemption, refresh), as its scopes are. Others are dropped without an error (Core
 * §5.5: the OP need not release a requested claim; an essential one is then simply absent).
 * Undefined when nothing is left.
 *
 * @see https://openid.net/specs/openid-connect-core-1_0.html#ScopeClaims
 */
export function permittedClaims(
  requested: RequestedClaims | undefined,
  client: Pick<ClientRecord, 'permissions'>,
  ctx: Pick<Context, 'scopes'>,
): RequestedClaims | undefined {
  return approvedClaims(requested, (name) => isPermittedClaim(name, client, ctx))
}
