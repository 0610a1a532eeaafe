/**
 * Fixtures of the token confusion matrix (#39 item 8, test/conformance/security/token_confusion.test.ts):
 * two confidential clients with every grant, `alpha` (the one that acts at every place) and `beta`
 * (the other client); the kinds of token the service issues or receives, each minted for real
 * through the service for either client (`MINT`); and the places that accept a token, each run as
 * a client would use it, with its outcome: accepted, or refused and why (`PLACES`).
 *
 * The service issues no opaque access tokens: access tokens are always JWTs (`at+jwt`, RFC 9068).
 * Its opaque tokens are refresh tokens, authorization codes, device and user codes, PAR
 * `request_uri`s and registration access tokens, each a row of the matrix.
 *
 * "Issued to" for the kinds a client makes: a client assertion is signed by the client's key; a
 * DPoP proof is the acting client's fresh one (same) or one the other client already sent (other:
 * captured); a request object is signed by the client's key; a Client ID Metadata Document URL is
 * the client's own (the service never fetches it at these places). A registration access token is
 * that of the client's dynamic twin, registered at /connect/register. The acting client holds its
 * DPoP key: it sends a proof of it with a DPoP-bound token wherever a proof can go.
 */
import { SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair } from 'jose'
import type { ClientRegistration } from '../../../src/clients/index.ts'
import type { Store } from '../../../src/storage/types.ts'
import { Browser } from '../../helpers/browser.ts'
import { approveDevice } from '../../helpers/device.ts'
import { authorizationUrl, authorize } from '../../helpers/flow.ts'
import { requestParams } from '../../helpers/par.ts'
import { ISSUER, type clock, discover, form, makeService } from '../../helpers/service.ts'
import {
  type ClientKey,
  JWT_BEARER_ASSERTION_TYPE,
  clientKey,
  signAssertion,
} from '../client_auth/private_key_jwt_fixtures.ts'

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
/** The identity provider the matrix's service trusts (#45). */
export const IDP = 'https://idp.example.test'
export const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code'
export const CIBA = 'urn:openid:params:grant-type:ciba'
const AT_TYPE = 'urn:ietf:params:oauth:token-type:access_token'
const IDT_TYPE = 'urn:ietf:params:oauth:token-type:id_token'
const ID_JAG_TYPE = 'urn:ietf:params:oauth:token-type:id-jag'
/** #45: the authorization server the ID-JAGs of the matrix are for (this service as its users' IdP). */
const ID_JAG_AUDIENCE = 'https://mcp-as.example.test'
const ADDRESS = '203.0.113.39'

/** The kinds of token (rows), each offered as issued to the acting client (`same`) and to the other. */
export const KINDS = [
  'access_token',
  'access_token_dpop',
  'client_credentials_token',
  'grant_management_token',
  'exchanged_token',
  'id_token',
  // #45: an ID-JAG this service issued as an identity provider (for another authorization server).
  'issued_id_jag',
  'refresh_token',
  'logout_token',
  'authorization_code',
  'device_code',
  'user_code',
  'auth_req_id',
  'request_uri',
  'client_assertion',
  'dpop_proof',
  'request_object',
  'registration_access_token',
  'metadata_document_url',
  // #45: ID-JAGs of the trusted test identity provider: for the client (same) or another (other),
  // then the same ID-JAG typed plain JWT, and one for another authorization server.
  'id_jag',
  'id_jag_typ_jwt',
  'id_jag_other_audience',
] as const
export type Kind = (typeof KINDS)[number]
export type Side = 'same' | 'other'

/** The places that accept a token (columns). */
export const PLACES = [
  'subject_token(access_token)',
  'subject_token(id_token)',
  'actor_token(access_token)',
  'actor_token(id_token)',
  'id_token_hint@authorize',
  'id_token_hint@logout',
  'id_token_hint@ciba',
  'userinfo(Bearer)',
  'userinfo(DPoP)',
  'introspection',
  'revocation',
  'client_assertion',
  'DPoP',
  'request',
  'request_uri',
  'refresh_token',
  'code',
  'device_code',
  'auth_req_id',
  'registration_management',
  'grant_management(GET)',
  'grant_management(DELETE)',
  'assertion(jwt-bearer)',
] as const
export type Place = (typeof PLACES)[number]

/**
 * Kinds used up by their accepted use (or whose acceptance changes state): every cell mints its
 * own, so no cell sees another's leftovers (a rotated refresh token, a spent code or `jti`).
 */
export const SINGLE_USE: ReadonlySet<Kind> = new Set([
  'refresh_token',
  'authorization_code',
  'device_code',
  'auth_req_id',
  'request_uri',
  'client_assertion',
  'dpop_proof',
  'id_jag',
])

/**
 * The place where a kind is used for what it is: after a revocation answered 200, the token is
 * run there again by its own client to see whether the revocation took effect. The kinds without
 * one carry no state a revocation could end (a proof, a URL, a code typed by a person, a logout
 * token that nothing accepts): for them a 200 is a refusal.
 */
export const HOME: Partial<Record<Kind, Place>> = {
  access_token: 'introspection',
  access_token_dpop: 'introspection',
  client_credentials_token: 'introspection',
  grant_management_token: 'introspection',
  exchanged_token: 'introspection',
  refresh_token: 'introspection',
  id_token: 'id_token_hint@logout',
  authorization_code: 'code',
  device_code: 'device_code',
  auth_req_id: 'auth_req_id',
  request_uri: 'request_uri',
  client_assertion: 'client_assertion',
  registration_access_token: 'registration_management',
}

/** A DPoP key pair and its thumbprint. */
export interface DpopKey {
  keyPair: CryptoKeyPair
  jwk: Record<string, unknown>
  jkt: string
}

/** One of the two clients, with what it holds. */
export interface Party {
  name: 'alpha' | 'beta'
  clientId: string
  /** Its private_key_jwt key (every request it makes authenticates with an assertion). */
  key: ClientKey
  /** The key its DPoP proofs are made with. */
  dpop: DpopKey
  redirectUri: string
  plru: string
  backchannelUri: string
}

/** A token minted for `owner`, with what its legitimate use needs beside it. */
export interface Minted {
  kind: Kind
  value: string
  owner: Party
  /** An authorization code's PKCE verifier and redirect URI. */
  verifier?: string
  redirectUri?: string
  /** A registration access token's dynamic client. */
  dynamicClientId?: string
}

/** Where a cell ended: accepted, or refused with the error (JSON, redirect or page) when there was one. */
export interface Outcome {
  accepted: boolean
  /** The `error` of a JSON body or an error redirect; `inactive` (introspection); `unrevoked` (revocation). */
  error?: string
  /** An HTML error page's text. */
  page?: string
  detail: string
}

async function dpopKey(): Promise<DpopKey> {
  const keyPair = (await generateKeyPair('ES256')) as CryptoKeyPair
  const jwk = (await exportJWK(keyPair.publicKey)) as Record<string, unknown>
  return { keyPair, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') }
}

const PERMISSIONS = [
  'ept:authorization',
  'ept:token',
  'ept:logout',
  'ept:revocation',
  'ept:introspection',
  'ept:device_authorization',
  'ept:backchannel_authentication',
  `gt:${CIBA}`,
  'gt:authorization_code',
  'gt:refresh_token',
  'gt:client_credentials',
  `gt:${DEVICE_CODE}`,
  `gt:${TOKEN_EXCHANGE}`,
  `gt:${JWT_BEARER}`,
  'rst:code',
  'scp:openid',
  'scp:profile',
  'scp:api1',
  'scp:grant_management_query',
  'scp:grant_management_revoke',
]

async function party(name: 'alpha' | 'beta'): Promise<Party> {
  const origin = `https://${name}.example.test`
  return {
    name,
    clientId: name,
    key: await clientKey('ES256'),
    dpop: await dpopKey(),
    redirectUri: `${origin}/cb`,
    plru: `${origin}/bye`,
    backchannelUri: `${origin}/backchannel-logout`,
  }
}

function registration(p: Party): ClientRegistration {
  return {
    clientId: p.clientId,
    displayName: p.name,
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwks: { keys: [p.key.jwk] } as ClientRegistration['jwks'],
    permissions: PERMISSIONS,
    redirectUris: [p.redirectUri],
    postLogoutRedirectUris: [p.plru],
    backchannelLogoutUri: p.backchannelUri,
  }
}

const CLIENT_PREFIXES = ['https://alpha.example.test', 'https://beta.example.test']

/** The service of one store, the two clients, and a browser signed in as alice. */
export async function matrixSetup(store: Store, time: ReturnType<typeof clock>) {
  const deliveries: Array<{ url: string; token: string }> = []
  const idp = await clientKey('ES256')
  const { service } = await makeService({
    identityAssertion: {
      issuers: [{ issuer: IDP, jwks: { keys: [idp.jwk as Record<string, unknown>] } }],
      // One entry per party (#45 review item 1: an entry is one local client's).
      audiences: (['alpha', 'beta'] as const).map((name) => ({
        issuer: ID_JAG_AUDIENCE,
        client: name,
        clientId: `${name}-at-mcp`,
        scopes: ['tools.read'],
      })),
    },
    store,
    now: time.now,
    throttle: false,
    dynamicClientRegistration: { scopes: ['openid'] },
    backchannelLogout: {
      fetch: async (url: string, init: RequestInit) => {
        deliveries.push({ url, token: new URLSearchParams(String(init.body)).get('logout_token') ?? '' })
        return new Response(null, { status: 204 })
      },
    },
  })
  const alpha = await party('alpha')
  const beta = await party('beta')
  for (const p of [alpha, beta]) await service.clients.ensure(registration(p))
  const as = await discover(service.fetch)
  const main = new Browser(service.fetch, CLIENT_PREFIXES)
  return { service, store, clock: time, as, main, alpha, beta, deliveries, idp }
}

export type MatrixCtx = Awaited<ReturnType<typeof matrixSetup>> & {
  /** Each party's own user access token (the subject of the actor_token columns). */
  userAccessToken?: Record<Party['name'], string>
  /** Each party's dynamic twin (the client of its shared registration access token). */
  twins?: Record<Party['name'], string>
}

/** A browser carrying the main browser's cookies (alice's session), for one request chain. */
function sessionBrowser(ctx: MatrixCtx): Browser {
  const browser = new Browser(ctx.service.fetch, CLIENT_PREFIXES)
  for (const [name, value] of ctx.main.cookies) browser.cookies.set(name, value)
  return browser
}

// Requests as a client.

/** A DPoP proof (RFC 9449 §4.2) made with `key` for `htm` `htu` (and `ath` of an access token). */
export async function dpopProof(
  ctx: MatrixCtx,
  key: DpopKey,
  htm: string,
  htu: string,
  accessToken?: string,
): Promise<string> {
  const ath =
    accessToken === undefined
      ? undefined
      : Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(accessToken))).toString('base64url')
  return new SignJWT({ jti: crypto.randomUUID(), htm, htu, iat: ctx.clock.now(), ...(ath ? { ath } : {}) })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.keyPair.privateKey)
}

/** A private_key_jwt client assertion (RFC 7523 §3) of `p`, fresh. */
function assertionOf(ctx: MatrixCtx, p: Party): Promise<string> {
  return signAssertion(p.key, p.clientId, ctx.clock.now())
}

/** A form POST to `url` authenticated as `p` (private_key_jwt), with extra headers. */
async function clientPost(
  ctx: MatrixCtx,
  p: Party,
  url: string,
  params: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  const auth = {
    client_id: p.clientId,
    client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
    client_assertion: await assertionOf(ctx, p),
  }
  return ctx.service.fetch(form(url, { ...auth, ...params }, headers))
}

/** A token request as `p`, with a DPoP proof of `dpop` when given. */
async function tokenRequest(
  ctx: MatrixCtx,
  p: Party,
  params: Record<string, string>,
  dpop?: DpopKey,
): Promise<Response> {
  const url = ctx.as.token_endpoint as string
  const headers: Record<string, string> = dpop ? { dpop: await dpopProof(ctx, dpop, 'POST', url) } : {}
  return clientPost(ctx, p, url, params, headers)
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>
}

/** A successful token response's body, else an error naming what was asked. */
async function tokens(response: Response, what: string): Promise<Record<string, string>> {
  const body = await json(response)
  if (response.status !== 200) throw new Error(`minting ${what}: ${response.status} ${JSON.stringify(body)}`)
  return body as Record<string, string>
}

// Minting.

/** The code flow of `p` in `browser` (alice; signs in when the browser has no session). */
async function codeFor(ctx: MatrixCtx, p: Party, browser: Browser) {
  const request = await authorizationUrl(ctx.as, {
    clientId: p.clientId,
    redirectUri: p.redirectUri,
    scope: 'openid profile api1',
  })
  const callback = await authorize(browser, request.url)
  const code = callback.searchParams.get('code')
  if (code === null) throw new Error(`no code for ${p.name}: ${callback.href}`)
  return { code, verifier: request.verifier, redirectUri: p.redirectUri }
}

/** Alice's tokens for `p` through the code flow (bound to `p`'s DPoP key when asked). */
async function userTokens(ctx: MatrixCtx, p: Party, bound = false, browser = sessionBrowser(ctx)) {
  const { code, verifier } = await codeFor(ctx, p, browser)
  const response = await tokenRequest(
    ctx,
    p,
    { grant_type: 'authorization_code', code, redirect_uri: p.redirectUri, code_verifier: verifier },
    bound ? p.dpop : undefined,
  )
  return tokens(response, `tokens of ${p.name}`)
}

/** Signs alice in on the main browser (the session every other flow reuses). */
export async function signInMain(ctx: MatrixCtx): Promise<void> {
  await codeFor(ctx, ctx.alpha, ctx.main)
}

/** Resolves once `check` holds (polling), failing after `ms`. */
async function until(check: () => boolean, ms = 5000): Promise<void> {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > ms) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/**
 * A back-channel logout token for `p`: alice signs in to `p` on a browser of her own (so the
 * session that ends is not the main one), logs out with its ID token, and `p`'s back-channel
 * endpoint receives the token.
 */
async function logoutToken(ctx: MatrixCtx, p: Party): Promise<string> {
  const browser = new Browser(ctx.service.fetch, CLIENT_PREFIXES)
  const idToken = (await userTokens(ctx, p, false, browser)).id_token as string
  const sid = decodeJwt(idToken).sid
  const url = new URL(ctx.as.end_session_endpoint as string)
  url.search = new URLSearchParams({
    id_token_hint: idToken,
    client_id: p.clientId,
    post_logout_redirect_uri: p.plru,
  }).toString()
  const response = await browser.request(url.href)
  if (response.status !== 303) throw new Error(`logout of ${p.name}: ${response.status}`)
  const mine = () =>
    ctx.deliveries.find((d) => d.url === p.backchannelUri && d.token !== '' && decodeJwt(d.token).sid === sid)
  await until(() => mine() !== undefined)
  return mine()?.token as string
}

/** A device authorization of `p`: its device and user codes (approved by alice when asked). */
async function deviceCodes(ctx: MatrixCtx, p: Party, approve: boolean) {
  const response = await clientPost(ctx, p, ctx.as.device_authorization_endpoint as string, {
    scope: 'openid profile',
  })
  const body = await tokens(response, `device authorization of ${p.name}`)
  if (approve) await approveDevice(ctx.store, body.user_code as string, ctx.clock.now())
  return body
}

/** A CIBA request of `p` naming alice, approved by her (through the store): its `auth_req_id`. */
async function cibaRequest(ctx: MatrixCtx, p: Party): Promise<string> {
  const endpoint = ctx.as.backchannel_authentication_endpoint as string
  const response = await clientPost(ctx, p, endpoint, { scope: 'openid profile', login_hint: 'alice' })
  const authReqId = (await tokens(response, `CIBA request of ${p.name}`)).auth_req_id as string
  const id = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(authReqId))).toString(
    'base64url',
  )
  const login = { sub: 'user-1', authTime: ctx.clock.now() }
  if (!(await ctx.store.cibaRequests.decide(id, { status: 'approved', login }, ctx.clock.now()))) {
    throw new Error(`the CIBA request of ${p.name} could not be approved`)
  }
  return authReqId
}

/** The outcome of a CIBA request with an id_token_hint: accepted when it answers an auth_req_id. */
async function cibaHint(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const endpoint = ctx.as.backchannel_authentication_endpoint as string
  const response = await clientPost(ctx, actor, endpoint, { scope: 'openid', id_token_hint: token.value })
  const body = await json(response).catch(() => ({}) as Record<string, unknown>)
  if (response.status === 200 && typeof body.auth_req_id === 'string') return { accepted: true, detail: '200' }
  return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
}

/** A pushed authorization request of `p` (RFC 9126): its `request_uri`. */
async function pushed(ctx: MatrixCtx, p: Party): Promise<string> {
  const { params } = await requestParams({ clientId: p.clientId, redirectUri: p.redirectUri, scope: 'openid profile' })
  const response = await clientPost(
    ctx,
    p,
    ctx.as.pushed_authorization_request_endpoint as string,
    Object.fromEntries(params),
  )
  const body = await json(response)
  if (response.status !== 201) throw new Error(`push of ${p.name}: ${response.status} ${JSON.stringify(body)}`)
  return body.request_uri as string
}

/** A request object (Core §6.1) signed with `p`'s key, naming `p`'s request. */
function requestObject(ctx: MatrixCtx, p: Party): Promise<string> {
  const now = ctx.clock.now()
  return new SignJWT({
    iss: p.clientId,
    aud: ISSUER,
    client_id: p.clientId,
    response_type: 'code',
    redirect_uri: p.redirectUri,
    scope: 'openid',
    state: crypto.randomUUID(),
    nonce: crypto.randomUUID(),
    iat: now,
    exp: now + 300,
  })
    .setProtectedHeader({ alg: p.key.alg, kid: p.key.kid, typ: 'oauth-authz-req+jwt' })
    .sign(p.key.privateKey)
}

/**
 * A registration access token (RFC 7591 §3.2.1): `p` registers a dynamic twin at /connect/register,
 * whose management URI the token opens; the twin counts as `p` at the management place.
 */
async function registrationToken(ctx: MatrixCtx, p: Party): Promise<Minted> {
  const response = await ctx.service.fetch(
    new Request(`${ISSUER}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [`https://${p.name}.example.test/dyn-cb`], client_name: `${p.name} twin` }),
    }),
    { address: ADDRESS },
  )
  const body = await json(response)
  if (response.status !== 201) throw new Error(`registration of ${p.name}: ${response.status}`)
  return {
    kind: 'registration_access_token',
    value: body.registration_access_token as string,
    owner: p,
    dynamicClientId: body.client_id as string,
  }
}

/** A client_credentials access token of `p` (scope api1, or `scope`). */
async function clientCredentialsToken(ctx: MatrixCtx, p: Party, scope = 'api1'): Promise<string> {
  const response = await tokenRequest(ctx, p, { grant_type: 'client_credentials', scope })
  return (await tokens(response, `client credentials of ${p.name}`)).access_token as string
}

/** `p` exchanges its own user access token (RFC 8693): the exchanged token is `p`'s. */
async function exchangedToken(ctx: MatrixCtx, p: Party): Promise<string> {
  const subject = ctx.userAccessToken?.[p.name] ?? ((await userTokens(ctx, p)).access_token as string)
  const response = await tokenRequest(ctx, p, {
    grant_type: TOKEN_EXCHANGE,
    subject_token: subject,
    subject_token_type: AT_TYPE,
  })
  return (await tokens(response, `exchange of ${p.name}`)).access_token as string
}

/** #45: `p` exchanges alice's ID token issued to it for an ID-JAG (this service as the IdP). */
async function issuedIdJag(ctx: MatrixCtx, p: Party): Promise<string> {
  const response = await tokenRequest(ctx, p, {
    grant_type: TOKEN_EXCHANGE,
    requested_token_type: ID_JAG_TYPE,
    subject_token: (await userTokens(ctx, p)).id_token as string,
    subject_token_type: IDT_TYPE,
    audience: ID_JAG_AUDIENCE,
  })
  return (await tokens(response, `ID-JAG of ${p.name}`)).access_token as string
}

/**
 * A DPoP proof of `p` for a token request: `alpha`'s is fresh (it acts with it); `beta`'s is one
 * it already sent with its own token request, as whoever captured it would hold it.
 */
async function proofOf(ctx: MatrixCtx, p: Party): Promise<string> {
  const proof = await dpopProof(ctx, p.dpop, 'POST', ctx.as.token_endpoint as string)
  if (p.name === 'alpha') return proof
  const params = { grant_type: 'client_credentials', scope: 'api1' }
  const response = await clientPost(ctx, p, ctx.as.token_endpoint as string, params, { dpop: proof })
  await tokens(response, `a DPoP-bound token of ${p.name}`)
  return proof
}

/**
 * An ID-JAG (#45) of the trusted identity provider for alice (by email) and `p`, for this server
 * (or `aud`), scope api1, typed oauth-id-jag+jwt (or `typ`).
 */
function idJag(ctx: MatrixCtx, p: Party, options: { typ?: string; aud?: string } = {}): Promise<string> {
  const now = ctx.clock.now()
  return new SignJWT({
    iss: IDP,
    sub: 'idp-alice',
    email: 'alice@example.com',
    aud: options.aud ?? ISSUER,
    client_id: p.clientId,
    jti: crypto.randomUUID(),
    iat: now,
    exp: now + 300,
    scope: 'api1',
  })
    .setProtectedHeader({ alg: 'ES256', kid: ctx.idp.kid, typ: options.typ ?? 'oauth-id-jag+jwt' })
    .sign(ctx.idp.privateKey)
}

/** Mints a token of `kind` issued to (or made by) `owner`, for real through the service. */
export async function mint(ctx: MatrixCtx, kind: Kind, owner: Party): Promise<Minted> {
  const of = (value: string): Minted => ({ kind, value, owner })
  switch (kind) {
    case 'access_token':
      return of((await userTokens(ctx, owner)).access_token as string)
    case 'access_token_dpop':
      return of((await userTokens(ctx, owner, true)).access_token as string)
    case 'client_credentials_token':
      return of(await clientCredentialsToken(ctx, owner))
    case 'grant_management_token':
      return of(await clientCredentialsToken(ctx, owner, 'grant_management_query grant_management_revoke'))
    case 'exchanged_token':
      return of(await exchangedToken(ctx, owner))
    case 'id_token':
      return of((await userTokens(ctx, owner)).id_token as string)
    case 'issued_id_jag':
      return of(await issuedIdJag(ctx, owner))
    case 'refresh_token':
      return of((await userTokens(ctx, owner)).refresh_token as string)
    case 'logout_token':
      return of(await logoutToken(ctx, owner))
    case 'authorization_code': {
      const { code, verifier, redirectUri } = await codeFor(ctx, owner, sessionBrowser(ctx))
      return { kind, value: code, owner, verifier, redirectUri }
    }
    case 'device_code':
      return of((await deviceCodes(ctx, owner, true)).device_code as string)
    case 'user_code':
      return of((await deviceCodes(ctx, owner, false)).user_code as string)
    case 'auth_req_id':
      return of(await cibaRequest(ctx, owner))
    case 'request_uri':
      return of(await pushed(ctx, owner))
    case 'client_assertion':
      return of(await assertionOf(ctx, owner))
    case 'dpop_proof':
      return of(await proofOf(ctx, owner))
    case 'request_object':
      return of(await requestObject(ctx, owner))
    case 'registration_access_token':
      return registrationToken(ctx, owner)
    case 'metadata_document_url':
      // A Client ID Metadata Document URL, as a client would name itself.
      return of(`https://${owner.name}.example.test/oauth-client.json`)
    case 'id_jag':
      return of(await idJag(ctx, owner))
    case 'id_jag_typ_jwt':
      return of(await idJag(ctx, owner, { typ: 'JWT' }))
    case 'id_jag_other_audience':
      return of(await idJag(ctx, owner, { aud: 'https://other-as.example.test' }))
  }
}

// Places.

/** The outcome of a token-endpoint request: accepted with an access token, else its error. */
async function tokenOutcome(response: Response): Promise<Outcome> {
  const body = await json(response).catch(() => ({}) as Record<string, unknown>)
  if (response.status === 200 && typeof body.access_token === 'string') {
    return { accepted: true, detail: `200 ${String(body.token_type)}` }
  }
  return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
}

/** The outcome of an authorization request in alice's session: accepted when it ends in a code. */
async function authorizeOutcome(ctx: MatrixCtx, url: URL): Promise<Outcome> {
  const result = await sessionBrowser(ctx).navigate(url.href)
  if (result.callback) {
    const error = result.callback.searchParams.get('error')
    if (error === null && result.callback.searchParams.has('code')) return { accepted: true, detail: 'code' }
    return { accepted: false, error: error ?? 'none', detail: `redirect error=${String(error)}` }
  }
  const page = result.page
  return { accepted: false, page: page?.html ?? '', detail: `page ${String(page?.status)}` }
}

/** The proof a holder sends beside a token at the token endpoint: of its own key, for DPoP-bound tokens. */
function holderKey(token: Minted, actor: Party): DpopKey | undefined {
  return token.kind === 'access_token_dpop' ? actor.dpop : undefined
}

/** Token exchange as `actor`, with the token as subject or actor token of `type`. */
async function exchangeAt(
  ctx: MatrixCtx,
  token: Minted,
  actor: Party,
  role: 'subject' | 'actor',
  type: string,
): Promise<Outcome> {
  const params: Record<string, string> =
    role === 'subject'
      ? { subject_token: token.value, subject_token_type: type }
      : {
          subject_token: ctx.userAccessToken?.[actor.name] as string,
          subject_token_type: AT_TYPE,
          actor_token: token.value,
          actor_token_type: type,
        }
  const response = await tokenRequest(ctx, actor, { grant_type: TOKEN_EXCHANGE, ...params }, holderKey(token, actor))
  return tokenOutcome(response)
}

function authorizeUrl(ctx: MatrixCtx, actor: Party, extra: Record<string, string>): URL {
  const url = new URL(ctx.as.authorization_endpoint as string)
  url.search = new URLSearchParams({ client_id: actor.clientId, ...extra }).toString()
  return url
}

/** `prompt=none` in alice's session with the token as `id_token_hint` (Core §3.1.2.1): honoured when a code comes back. */
async function authorizeHint(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const request = await authorizationUrl(ctx.as, {
    clientId: actor.clientId,
    redirectUri: actor.redirectUri,
    scope: 'openid',
    extra: { prompt: 'none', id_token_hint: token.value },
  })
  return authorizeOutcome(ctx, request.url)
}

/**
 * RP-Initiated Logout (§2) with the token as `id_token_hint`, the actor's `client_id` and its
 * post-logout redirect URI, from a browser without a session (nothing ends): honoured when the
 * browser is sent to that URI.
 */
async function logoutHint(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const url = new URL(ctx.as.end_session_endpoint as string)
  url.search = new URLSearchParams({
    id_token_hint: token.value,
    client_id: actor.clientId,
    post_logout_redirect_uri: actor.plru,
  }).toString()
  const response = await ctx.service.fetch(new Request(url, { redirect: 'manual' }))
  const location = response.headers.get('location')
  if (response.status === 303 && location === actor.plru) return { accepted: true, detail: '303' }
  return { accepted: false, page: await response.text(), detail: `${response.status}` }
}

/** UserInfo (Core §5.3) with the token as `scheme` (a DPoP one with a proof of the actor's key). */
async function userinfo(ctx: MatrixCtx, token: Minted, actor: Party, scheme: 'Bearer' | 'DPoP'): Promise<Outcome> {
  const url = ctx.as.userinfo_endpoint as string
  const headers: Record<string, string> = { authorization: `${scheme} ${token.value}` }
  if (scheme === 'DPoP') headers.dpop = await dpopProof(ctx, actor.dpop, 'GET', url, token.value)
  const response = await ctx.service.fetch(new Request(url, { headers }))
  if (response.status === 200) return { accepted: true, detail: '200' }
  const body = await json(response).catch(() => ({}) as Record<string, unknown>)
  return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
}

async function introspect(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const response = await clientPost(ctx, actor, ctx.as.introspection_endpoint as string, { token: token.value })
  const body = await json(response)
  if (response.status === 200 && body.active === true) return { accepted: true, detail: 'active' }
  if (response.status === 200) return { accepted: false, error: 'inactive', detail: 'active:false' }
  return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
}

/**
 * RFC 7009 as the actor: refused with an error, or 200 (§2.2: also for tokens it does not know);
 * after a 200 the token is run at its home place by its own client, and the revocation was
 * accepted only if the token stopped working there.
 */
async function revoke(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const response = await clientPost(ctx, actor, ctx.as.revocation_endpoint as string, { token: token.value })
  if (response.status !== 200) {
    const body = await json(response)
    return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
  }
  const home = HOME[token.kind]
  if (home === undefined) return { accepted: false, error: 'unrevoked', detail: '200 (nothing to revoke)' }
  const after = await runPlace(ctx, home, token, token.owner)
  return after.accepted
    ? { accepted: false, error: 'unrevoked', detail: `200, still accepted at ${home}` }
    : { accepted: true, detail: `200, then refused at ${home} (${after.detail})` }
}

/** client_credentials as the actor, authenticated by the token as its client assertion (RFC 7523 §2.2). */
async function clientAssertion(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const params = {
    grant_type: 'client_credentials',
    scope: 'api1',
    client_id: actor.clientId,
    client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
    client_assertion: token.value,
  }
  return tokenOutcome(await ctx.service.fetch(form(ctx.as.token_endpoint as string, params)))
}

/** client_credentials as the actor with the token as its DPoP proof (RFC 9449 §5): accepted when DPoP-bound. */
async function dpopHeader(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const params = { grant_type: 'client_credentials', scope: 'api1' }
  const response = await clientPost(ctx, actor, ctx.as.token_endpoint as string, params, { dpop: token.value })
  const outcome = await tokenOutcome(response)
  return outcome.accepted && outcome.detail !== '200 DPoP' ? { ...outcome, accepted: false } : outcome
}

/** RFC 7592 §2: the actor's (dynamic twin's) client configuration read with the token as Bearer. */
async function management(ctx: MatrixCtx, token: Minted, actor: Party): Promise<Outcome> {
  const own = token.owner === actor ? token.dynamicClientId : undefined
  const clientId = own ?? ctx.twins?.[actor.name]
  const response = await ctx.service.fetch(
    new Request(`${ISSUER}/connect/register/${encodeURIComponent(String(clientId))}`, {
      headers: { authorization: `Bearer ${token.value}` },
    }),
    { address: ADDRESS },
  )
  if (response.status === 200) return { accepted: true, detail: '200' }
  const body = await json(response).catch(() => ({}) as Record<string, unknown>)
  return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
}

/**
 * Grant Management for OAuth 2.0 §6 as the actor, at the resource URL of a grant of alice's to the
 * actor: GET queries the grant of its shared user access token; DELETE revokes a fresh one, and is
 * accepted only if the grant ended (its access token inactive at introspection). The token goes as
 * Bearer, or, DPoP-bound, as DPoP with a proof of the actor's key for the grant's URL.
 */
async function grantManagement(
  ctx: MatrixCtx,
  token: Minted,
  actor: Party,
  method: 'GET' | 'DELETE',
): Promise<Outcome> {
  const grantToken =
    method === 'GET'
      ? (ctx.userAccessToken?.[actor.name] as string)
      : ((await userTokens(ctx, actor)).access_token as string)
  const url = `${ctx.as.grant_management_endpoint as string}/${String(decodeJwt(grantToken).gid)}`
  const key = holderKey(token, actor)
  const headers: Record<string, string> = { authorization: `${key ? 'DPoP' : 'Bearer'} ${token.value}` }
  if (key) headers.dpop = await dpopProof(ctx, key, method, url, token.value)
  const response = await ctx.service.fetch(new Request(url, { method, headers }))
  if (method === 'GET' && response.status === 200) return { accepted: true, detail: '200' }
  if (method === 'DELETE' && response.status === 204) {
    const after = await introspect(ctx, { kind: 'access_token', value: grantToken, owner: actor }, actor)
    return after.accepted
      ? { accepted: false, error: 'unrevoked', detail: '204, the grant still active' }
      : { accepted: true, detail: '204, then the grant inactive' }
  }
  const body = await json(response).catch(() => ({}) as Record<string, unknown>)
  return { accepted: false, error: String(body.error), detail: `${response.status} ${String(body.error)}` }
}

/** Offers `token` at `place`, acting as `actor`. */
export function runPlace(ctx: MatrixCtx, place: Place, token: Minted, actor: Party): Promise<Outcome> {
  const key = holderKey(token, actor)
  const grant = (params: Record<string, string>) =>
    tokenRequest(ctx, actor, params, key).then((response) => tokenOutcome(response))
  switch (place) {
    case 'subject_token(access_token)':
      return exchangeAt(ctx, token, actor, 'subject', AT_TYPE)
    case 'subject_token(id_token)':
      return exchangeAt(ctx, token, actor, 'subject', IDT_TYPE)
    case 'actor_token(access_token)':
      return exchangeAt(ctx, token, actor, 'actor', AT_TYPE)
    case 'actor_token(id_token)':
      return exchangeAt(ctx, token, actor, 'actor', IDT_TYPE)
    case 'id_token_hint@authorize':
      return authorizeHint(ctx, token, actor)
    case 'id_token_hint@logout':
      return logoutHint(ctx, token, actor)
    case 'id_token_hint@ciba':
      return cibaHint(ctx, token, actor)
    case 'userinfo(Bearer)':
      return userinfo(ctx, token, actor, 'Bearer')
    case 'userinfo(DPoP)':
      return userinfo(ctx, token, actor, 'DPoP')
    case 'introspection':
      return introspect(ctx, token, actor)
    case 'revocation':
      return revoke(ctx, token, actor)
    case 'client_assertion':
      return clientAssertion(ctx, token, actor)
    case 'DPoP':
      return dpopHeader(ctx, token, actor)
    case 'request':
      return authorizeOutcome(
        ctx,
        authorizeUrl(ctx, actor, {
          response_type: 'code',
          redirect_uri: actor.redirectUri,
          scope: 'openid',
          request: token.value,
        }),
      )
    case 'request_uri':
      // RFC 9126 §4: the other parameters are ignored for a pushed request_uri; they are a whole
      // request, so that a refusal is about the request_uri and nothing else.
      return authorizeOutcome(
        ctx,
        authorizeUrl(ctx, actor, {
          response_type: 'code',
          redirect_uri: actor.redirectUri,
          scope: 'openid',
          request_uri: token.value,
        }),
      )
    case 'refresh_token':
      return grant({ grant_type: 'refresh_token', refresh_token: token.value })
    case 'code':
      return grant({
        grant_type: 'authorization_code',
        code: token.value,
        redirect_uri: token.redirectUri ?? actor.redirectUri,
        code_verifier: token.verifier ?? 'a'.repeat(43),
      })
    case 'device_code':
      return grant({ grant_type: DEVICE_CODE, device_code: token.value })
    case 'auth_req_id':
      return grant({ grant_type: CIBA, auth_req_id: token.value })
    case 'registration_management':
      return management(ctx, token, actor)
    case 'grant_management(GET)':
      return grantManagement(ctx, token, actor, 'GET')
    case 'grant_management(DELETE)':
      return grantManagement(ctx, token, actor, 'DELETE')
    case 'assertion(jwt-bearer)':
      return grant({ grant_type: JWT_BEARER, assertion: token.value })
  }
}

/** The RFC error a refusal at each place answers (or `inactive` / `unrevoked`, see {@link Outcome}). */
export const REFUSALS: Record<Place, readonly string[]> = {
  // RFC 8693 §2.2.2: an invalid or unacceptable subject or actor token is invalid_request.
  'subject_token(access_token)': ['invalid_request'],
  'subject_token(id_token)': ['invalid_request'],
  'actor_token(access_token)': ['invalid_request'],
  'actor_token(id_token)': ['invalid_request'],
  // Core §3.1.2.6 (redirected), RP-Initiated Logout §2 (an error page).
  'id_token_hint@authorize': ['invalid_request'],
  'id_token_hint@logout': ['invalid_request'],
  // OpenID CIBA §13: a hint that is not an ID token of this issuer for the client.
  'id_token_hint@ciba': ['invalid_request'],
  // RFC 6750 §3.1, RFC 9449 §7.1.
  'userinfo(Bearer)': ['invalid_token', 'insufficient_scope'],
  'userinfo(DPoP)': ['invalid_token', 'invalid_dpop_proof', 'insufficient_scope'],
  // RFC 7662 §2.2: a token the caller may not see is inactive.
  introspection: ['inactive'],
  // RFC 7009 §2.1: another client's token is refused; §2.2: an invalid token is a 200 (nothing revoked).
  revocation: ['invalid_request', 'unrevoked'],
  // RFC 7523 §3.2 / RFC 6749 §5.2.
  client_assertion: ['invalid_client'],
  // RFC 9449 §5.
  DPoP: ['invalid_dpop_proof'],
  // Core §6.1: request objects are not supported.
  request: ['request_not_supported'],
  // RFC 9126 §4 (an error page: no redirect is known to be safe).
  request_uri: ['invalid_request_uri', 'request_uri_not_supported'],
  // RFC 6749 §5.2, RFC 8628 §3.5.
  refresh_token: ['invalid_grant'],
  code: ['invalid_grant'],
  device_code: ['invalid_grant'],
  // OpenID CIBA §11: RFC 6749 §5.2.
  auth_req_id: ['invalid_grant'],
  // RFC 7592 §2 / RFC 6750 §3.1.
  registration_management: ['invalid_token'],
  // RFC 6750 §3.1, RFC 9449 §7.1; Grant Management §6.6: a grant the caller may not see is a 404.
  'grant_management(GET)': ['invalid_token', 'invalid_dpop_proof', 'insufficient_scope', 'invalid_grant_id'],
  'grant_management(DELETE)': ['invalid_token', 'invalid_dpop_proof', 'insufficient_scope', 'invalid_grant_id'],
  // RFC 7521 §4.1.1, RFC 7523 §3.1 (#45).
  'assertion(jwt-bearer)': ['invalid_grant'],
}

/** Whether a refusal carries one of the place's RFC errors. */
export function refusedAsSpecified(place: Place, outcome: Outcome): boolean {
  return REFUSALS[place].some((error) => outcome.error === error || (outcome.page?.includes(error) ?? false))
}
