/**
 * Fixtures of the DPoP conformance tests (no `.test` suffix: never run alone): a service on a
 * clock that follows real time (oauth4webapi and openid-client put the real time in a proof's
 * `iat`), DPoP key pairs, proofs signed by hand for the refusals, and raw token requests.
 */
import { type CryptoKey, SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { authorizationUrl, authorize, redeemCallback, setup, webClient } from '../../helpers/flow.ts'
import { basic, clock, form } from '../../helpers/service.ts'

export type DpopContext = Awaited<ReturnType<typeof dpopSetup>>

/** The flow helpers' setup (service, metadata, browser, in-process fetch) on a live clock. */
export async function dpopSetup(options: Parameters<typeof setup>[0] = {}) {
  const time = clock(Math.floor(Date.now() / 1000))
  const ctx = await setup({ now: time.now, ...options })
  return { ...ctx, clock: time }
}

/** A DPoP key pair (the private key not extractable, as a browser keeps it) and its thumbprint. */
export async function dpopKey(alg: 'ES256' | 'EdDSA' | 'PS256' = 'ES256') {
  const keyPair = (await generateKeyPair(alg)) as CryptoKeyPair
  const jwk = await exportJWK(keyPair.publicKey)
  return { keyPair, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') }
}

export type DpopKey = Awaited<ReturnType<typeof dpopKey>>

/** A proof signed by hand with `key`: POST at the token endpoint now, `claims` override. */
export async function handProof(
  ctx: DpopContext,
  key: DpopKey,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({
    jti: crypto.randomUUID(),
    htm: 'POST',
    htu: ctx.as.token_endpoint,
    iat: ctx.clock.now(),
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk, ...header })
    .sign(key.keyPair.privateKey as CryptoKey)
}

/** A raw token request (form body), with a DPoP proof when given; `url` defaults to the token endpoint. */
export function tokenRequest(
  ctx: DpopContext,
  params: Record<string, string>,
  options: { auth?: [string, string]; proof?: string; url?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = {}
  if (options.auth) headers.authorization = basic(...options.auth)
  if (options.proof !== undefined) headers.dpop = options.proof
  return ctx.service.fetch(form(options.url ?? (ctx.as.token_endpoint as string), params, headers))
}

/** client_credentials as `service` (scope api1). */
export function serviceToken(ctx: DpopContext, proof?: string, url?: string): Promise<Response> {
  return tokenRequest(
    ctx,
    { grant_type: 'client_credentials', scope: 'api1' },
    { auth: ['service', 'service-secret'], ...(proof !== undefined ? { proof } : {}), ...(url ? { url } : {}) },
  )
}

export const serviceClient: oauth.Client = { client_id: 'service' }

/** client_credentials as `service` (scope api1) through oauth4webapi with a DPoP handle: the raw response. */
export function dpopClientCredentials(ctx: DpopContext, handle: oauth.DPoPHandle): Promise<Response> {
  return oauth.clientCredentialsGrantRequest(
    ctx.as,
    serviceClient,
    oauth.ClientSecretBasic('service-secret'),
    { scope: 'api1' },
    { ...ctx.opts, DPoP: handle },
  )
}

/** The code flow of the confidential `web` client, its code redeemed with a proof of `key`. */
export async function webTokensWithProof(ctx: DpopContext, key: DpopKey) {
  const request = await authorizationUrl(ctx.as)
  const callback = await authorize(ctx.browser, request.url)
  const withProof = { ...ctx, opts: { ...ctx.opts, DPoP: oauth.DPoP({}, key.keyPair) } }
  const { response } = await redeemCallback(withProof, callback, request)
  return oauth.processAuthorizationCodeResponse(ctx.as, webClient, response, {
    expectedNonce: request.nonce as string,
  })
}

/** The `cnf` claim of a JWT access token. */
export function cnfOf(accessToken: string): unknown {
  return decodeJwt(accessToken).cnf
}

/** The public SPA client (PKCE, no secret) as oauth4webapi sees it. */
export const spaClient: oauth.Client = { client_id: 'spa', token_endpoint_auth_method: 'none' }
export const SPA_CALLBACK = 'https://spa.example.test/callback'

/** The SPA's authorization (PKCE, the built-in sign-in) up to its callback parameters. */
export async function spaCode(ctx: DpopContext, extra: Record<string, string> = {}) {
  const request = await authorizationUrl(ctx.as, { clientId: 'spa', redirectUri: SPA_CALLBACK, extra })
  const callback = await authorize(ctx.browser, request.url)
  const params = oauth.validateAuthResponse(ctx.as, spaClient, callback, request.state as string)
  return { request, params }
}

/** Redeems the SPA's code, with a DPoP proof from `handle` when given; the raw response. */
export function redeemSpa(ctx: DpopContext, code: Awaited<ReturnType<typeof spaCode>>, handle?: oauth.DPoPHandle) {
  return oauth.authorizationCodeGrantRequest(
    ctx.as,
    spaClient,
    oauth.None(),
    code.params,
    SPA_CALLBACK,
    code.request.verifier,
    { ...ctx.opts, ...(handle ? { DPoP: handle } : {}) },
  )
}

export async function spaTokens(ctx: DpopContext, handle?: oauth.DPoPHandle) {
  const code = await spaCode(ctx)
  const response = await redeemSpa(ctx, code, handle)
  return oauth.processAuthorizationCodeResponse(ctx.as, spaClient, response, {
    expectedNonce: code.request.nonce as string,
  })
}

export function refreshSpa(ctx: DpopContext, refreshToken: string, handle?: oauth.DPoPHandle) {
  return oauth.refreshTokenGrantRequest(ctx.as, spaClient, oauth.None(), refreshToken, {
    ...ctx.opts,
    ...(handle ? { DPoP: handle } : {}),
  })
}
