/**
 * @module endpoints/par
 * The pushed authorization request endpoint, POST /connect/par (RFC 9126), as named steps: read
 * the form (no `request_uri` in it, §2.1), check the DPoP proof if one came (RFC 9449 §10.1),
 * authenticate the client as the token endpoint does (§2; a public client sends its client_id),
 * check that it may use the authorization endpoint, validate the parameters with the authorization
 * endpoint's own validation (`authorization_request.ts`), store them for `parTtl` seconds and
 * answer 201 with the request_uri (§2.2). Every error is JSON (§2.3), never a redirect.
 */
import { authenticateClient, requirePermission } from '../client_auth/index.ts'
import type { Context } from '../context.ts'
import { verifyRequestProof } from '../dpop/index.ts'
import { OAuthError } from '../errors.ts'
import { type Params, noStoreJson, readForm } from '../http.ts'
import { Permissions } from '../clients/index.ts'
import { RESOURCE_PARAMETERS } from '../protocol/index.ts'
import type { ClientRecord, PushedRequestRecord } from '../storage/index.ts'
import { randomToken } from '../crypto/index.ts'
import { Refusal, parseAuthorizationRequest, rawFromForm, verifyClientAndRedirect } from './authorization_request.ts'

/** RFC 9126 §2.2: the request_uri is this URN followed by a random reference. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:'
/** The reference: 32 random bytes, base64url (RFC 6749 §10.10: infeasible to guess). */
const REFERENCE = /^[A-Za-z0-9_-]{43}$/
/** Parameters that authenticate the client (RFC 9126 §2.1): not part of the authorization request. */
const CLIENT_AUTH_PARAMETERS: ReadonlySet<string> = new Set([
  'client_id',
  'client_secret',
  'client_assertion',
  'client_assertion_type',
])

/**
 * Answers a pushed authorization request: 201 with `request_uri` and `expires_in`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-2
 */
export async function handlePushedAuthorizationRequest(request: Request, ctx: Context): Promise<Response> {
  // RFC 8707 §2: `resource` may repeat; any other repeated parameter is invalid_request.
  const params = await readForm(request, ctx.config.limits, RESOURCE_PARAMETERS)
  // RFC 9126 §2.1: the request_uri parameter "MUST NOT be provided".
  if (params.has('request_uri')) throw new OAuthError('invalid_request', 'request_uri must not be pushed')
  const proofJkt = await checkDpopProof(request, ctx)
  // RFC 9126 §2: as at the token endpoint; a private_key_jwt assertion may name this endpoint.
  const { client } = await authenticateClient(request, params, ctx, { allowPublic: true, endpoint: 'par' })
  // RFC 9126 §2: whoever may send authorization requests may push them; no other permission.
  requirePermission(client, Permissions.Endpoints.Authorization, 'the authorization endpoint')
  await checkAuthorizationRequest(params, client, proofJkt, ctx)

  const reference = randomToken()
  const record: PushedRequestRecord = {
    // Stored under the reference's SHA-256, as codes and tokens are: the store never holds it.
    id: await ctx.sha256(reference),
    clientId: client.clientId,
    params: pushedPairs(params, client.clientId),
    expiresAt: ctx.now() + ctx.config.parTtl,
    ...(proofJkt !== undefined ? { dpopJkt: proofJkt } : {}),
  }
  await ctx.store.pushedRequests.put(record)
  const response = noStoreJson({ request_uri: REQUEST_URI_PREFIX + reference, expires_in: ctx.config.parTtl }, 201)
  // RFC 9449 §8.2: with nonces demanded, a fresh one for the token request that follows.
  const nonce = proofJkt !== undefined && ctx.config.dpop.requireNonce ? ctx.dpopNonces.current() : undefined
  if (nonce !== undefined) response.headers.set('dpop-nonce', await nonce)
  return response
}

/**
 * Takes the pushed request a request_uri names, once (RFC 9126 §4), for the client that pushed it
 * (§2.2): undefined when it is not a pushed request's URI, unknown, already used, expired or of
 * another client. The store checks the client in the same atomic step that takes it, so another
 * client's attempt neither uses it up nor learns more than of an unknown one (#27 item 9).
 */
export async function takePushedRequest(
  requestUri: string,
  clientId: string,
  ctx: Context,
): Promise<PushedRequestRecord | undefined> {
  if (!requestUri.startsWith(REQUEST_URI_PREFIX)) return undefined
  const reference = requestUri.slice(REQUEST_URI_PREFIX.length)
  if (!REFERENCE.test(reference)) return undefined
  const now = ctx.now()
  const record = await ctx.store.pushedRequests.take(await ctx.sha256(reference), now, clientId)
  // RFC 9126 §4: "An expired request_uri MUST be rejected as invalid." The client is checked
  // again: a host's own store may predate the clientId argument.
  return record && record.expiresAt > now && record.clientId === clientId ? record : undefined
}

/**
 * RFC 9449 §10.1: a DPoP proof sent with the push binds the code to its key. Checked as at the
 * token endpoint (htm POST, htu the PAR endpoint, the service's algorithms, nonce when required,
 * jti once), before the client authenticates: a nonce round trip spends no client assertion.
 * Returns its JWK thumbprint, or undefined without a `DPoP` header.
 */
async function checkDpopProof(request: Request, ctx: Context): Promise<string | undefined> {
  const header = request.headers.get('dpop')
  if (header === null) return undefined
  return (await verifyRequestProof(header, request, ctx.urls.par, ctx)).jkt
}

/**
 * RFC 9126 §2.1, §4: the pushed parameters pass the authorization endpoint's validation, for the
 * authenticated client. Every failure is an OAuthError for the JSON answer (§2.3; a bad
 * redirect_uri is invalid_request there).
 */
async function checkAuthorizationRequest(
  params: Params,
  client: ClientRecord,
  proofJkt: string | undefined,
  ctx: Context,
): Promise<void> {
  const raw = rawFromForm(params)
  // RFC 9126 §2.1: client_id is required, and authenticateClient checked a sent one names the client.
  raw.values.set('client_id', client.clientId)
  try {
    const verified = await verifyClientAndRedirect(raw, ctx, client)
    await parseAuthorizationRequest(raw, verified, ctx, { pushed: true, dpopJkt: proofJkt })
  } catch (err) {
    if (err instanceof Refusal) throw new OAuthError(err.code, err.description)
    throw err
  }
}

/** The authorization request parameters to store, in order: client_id first, no client credentials. */
function pushedPairs(params: Params, clientId: string): Array<[string, string]> {
  const pairs: Array<[string, string]> = [['client_id', clientId]]
  for (const [name, value] of params) {
    if (CLIENT_AUTH_PARAMETERS.has(name)) continue
    const list = params.lists?.get(name)
    if (list) for (const item of list) pairs.push([name, item])
    else pairs.push([name, value])
  }
  return pairs
}
