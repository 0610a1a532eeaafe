/**
 * @module client_auth/private_key_jwt
 * The `private_key_jwt` method (RFC 7523 §2.2 and §3, OpenID Connect Core §9) at the token,
 * introspection, revocation, PAR and device authorization endpoints: the request carries
 * `client_assertion_type` and `client_assertion` (verified by {@link verifyClientAssertion}).
 * Checks, in order:
 * - the client the request names (its form `client_id`, else the assertion's unverified `sub`)
 *   may authenticate from the source address (`allowedNetworks`)
 * - the caller is not throttled
 * - the assertion: accepted audiences are the issuer, the token endpoint and the endpoint called
 *   (see client_assertion.ts); under the `fapi2-security` profile only the issuer, as a string,
 *   and only PS256, ES256 and EdDSA (FAPI 2.0 Security Profile §5.3.2.1, §5.4.1)
 * Failures are `invalid_client` (RFC 6749 §5.2), each an audit event. They count against the
 * source address only: a forged assertion guesses nothing, and counting it against the client
 * would let anyone lock a client out.
 */
import { decodeJwt } from 'jose'
import type { Context, Endpoint } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { RequestMeta } from '../events/index.ts'
import type { Params } from '../http.ts'
import { inNetworks, metaOf, type ThrottleRule } from '../security/index.ts'
import { FAPI2_ALGORITHMS, isFapi2 } from '../config/index.ts'
import type { ClientRecord } from '../storage/index.ts'
import { type AssertionFailureReason, assertionFailureReason, verifyClientAssertion } from './client_assertion.ts'
import { type FailureReason, documentFailure, failure, recordFailure, refuseIfThrottled } from './failure.ts'

/** The endpoints that authenticate clients, whose URL an assertion may name as its audience. */
export type AuthenticatingEndpoint = Extract<
  Endpoint,
  'token' | 'introspection' | 'revocation' | 'par' | 'deviceAuthorization' | 'backchannelAuthentication'
>
const AUTHENTICATING: readonly AuthenticatingEndpoint[] = [
  'token',
  'introspection',
  'revocation',
  'par',
  'deviceAuthorization',
  'backchannelAuthentication',
]

/** The audit reason of an assertion failure (several verifier reasons share one). */
const EVENT_REASONS: Record<AssertionFailureReason, FailureReason> = {
  invalid_assertion: 'invalid_assertion',
  no_matching_key: 'invalid_assertion',
  invalid_signature: 'invalid_assertion',
  unknown_client: 'unknown_client',
  method_not_allowed: 'method_not_allowed',
  keys_unavailable: 'keys_unavailable',
  replayed: 'replayed',
}

/** Whether the request carries any part of a client assertion. */
export function hasAssertion(params: Params): boolean {
  return params.has('client_assertion') || params.has('client_assertion_type')
}

/** The client the request claims to be: the form's client_id, else the assertion's `sub` (unverified). */
function claimedClientId(params: Params): string | undefined {
  const bodyId = params.get('client_id')
  if (bodyId !== undefined) return bodyId
  const assertion = params.get('client_assertion')
  if (assertion === undefined) return undefined
  let sub: unknown
  try {
    sub = decodeJwt(assertion).sub
  } catch {
    return undefined // the verifier says what is wrong with it
  }
  // Never toward a store: U+0000 or an unpaired surrogate (the verifier refuses them).
  // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what this refuses.
  return typeof sub === 'string' && sub !== '' && !/\u0000|\p{Cs}/u.test(sub) ? sub : undefined
}

/**
 * The URL of the endpoint called: the caller's `endpoint`, else the one whose path the request has
 * (the URL itself always comes from the issuer, never from the request).
 */
function endpointUrl(request: Request, ctx: Context, endpoint: AuthenticatingEndpoint | undefined): string {
  if (endpoint !== undefined) return ctx.urls[endpoint]
  const pathname = new URL(request.url).pathname
  const found = AUTHENTICATING.find((name) => new URL(ctx.urls[name]).pathname === pathname)
  return ctx.urls[found ?? 'token']
}

/** What the assertion may be: its audiences and algorithms (stricter under fapi2-security). */
function assertionPolicy(
  request: Request,
  ctx: Context,
  endpoint: AuthenticatingEndpoint | undefined,
): { audiences: string[]; strictAudience: boolean; algorithms?: readonly string[] } {
  const { issuer } = ctx.config
  // FAPI 2.0 §5.3.2.1 / 7523bis: the issuer identifier alone; §5.4.1: PS256, ES256, EdDSA.
  if (isFapi2(ctx.config))
    return { audiences: [issuer], strictAudience: true, algorithms: [...FAPI2_ALGORITHMS, 'Ed25519'] }
  const audiences = [...new Set([issuer, ctx.urls.token, endpointUrl(request, ctx, endpoint)])]
  return { audiences, strictAudience: false }
}

/**
 * Authenticates the client by its assertion (see the module comment); returns the client.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-2.2
 * @see https://openid.net/specs/openid-connect-core-1_0.html#ClientAuthentication
 */
export async function authenticateWithAssertion(
  request: Request,
  params: Params,
  ctx: Context,
  endpoint?: AuthenticatingEndpoint,
): Promise<ClientRecord> {
  const meta = metaOf(request)
  const clientId = claimedClientId(params)
  let client: ClientRecord | undefined
  let rules: readonly ThrottleRule[] | undefined
  if (clientId !== undefined) {
    const found = ctx.clients.get(clientId, meta.address)
    client = found instanceof Promise ? await found.catch(documentFailure) : found
    const cachedRules = ctx.throttle?.clientRules(clientId, meta.address)
    rules = (cachedRules instanceof Promise ? await cachedRules : cachedRules)?.address
    if (client?.allowedNetworks && !inNetworks(meta.address, client.allowedNetworks)) {
      const description = 'the client may not authenticate from this network'
      throw await failure(ctx, meta, clientId, 'network_not_allowed', description, rules)
    }
    if (rules) {
      const refusal = refuseIfThrottled(ctx, meta, clientId, rules)
      if (refusal) await refusal
    }
  }
  try {
    const verified = await verifyClientAssertion({
      clientAssertionType: params.get('client_assertion_type'),
      clientAssertion: params.get('client_assertion'),
      clientId: params.get('client_id'),
      // The verifier asks for the assertion's `sub`, which is `clientId` once its claims checked out.
      findClient: (id) => (id === clientId ? client : undefined),
      ...assertionPolicy(request, ctx, endpoint),
      now: ctx.now(),
      replay: (key, expiresAt, now) => ctx.store.replays.use(key, expiresAt, now),
      keysFor: (owner, options) => ctx.clientKeys.keysFor(owner, options),
    })
    return verified.client
  } catch (err) {
    throw await assertionFailure(ctx, meta, clientId, err, rules)
  }
}

/** Records a refused assertion (event, address counter) and returns the error to throw. */
async function assertionFailure(
  ctx: Context,
  meta: RequestMeta,
  clientId: string | undefined,
  err: unknown,
  rules: readonly ThrottleRule[] | undefined,
): Promise<unknown> {
  const reason = assertionFailureReason(err)
  // Not a refusal of the assertion (the store is unavailable, a programmer error): as it is.
  if (reason === undefined || !(err instanceof OAuthError)) return err
  await recordFailure(ctx, meta, clientId, EVENT_REASONS[reason], rules)
  return err
}
