/**
 * UI-01 UI-06 INT-02 X-04 and RFC 9449 §6.2, §7.1, §7.2 where the service is the resource:
 * userinfo with `Authorization: DPoP` and a proof carrying `ath` (oauth4webapi's `DPoP` option),
 * DPoP challenges for every refusal, the downgrade of a bound token to Bearer refused, and
 * introspection answering `cnf.jkt` and `token_type` DPoP.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { accessTokenHash } from '../../../src/dpop/thumbprint.ts'
import { safeDescription as wire } from '../../../src/errors.ts'
import { webAuth, webClient } from '../../helpers/flow.ts'
import { ISSUER } from '../../helpers/service.ts'
import {
  type DpopContext,
  type DpopKey,
  dpopKey,
  dpopSetup,
  handProof,
  serviceToken,
  spaClient,
  spaTokens,
  webTokensWithProof,
} from './dpop_fixtures.ts'

const ALGS = 'ES256 EdDSA Ed25519 RS256 PS256 ES384'

/** A signed-in SPA with a DPoP-bound access token (scope openid profile email). */
async function boundUser(ctx: DpopContext) {
  const key = await dpopKey()
  const handle = oauth.DPoP({}, key.keyPair)
  const tokens = await spaTokens(ctx, handle)
  return { key, handle, token: tokens.access_token }
}

/** A userinfo request with the given Authorization header and DPoP proof. */
function userinfo(ctx: DpopContext, authorization: string, proof?: string, method = 'GET'): Promise<Response> {
  const headers: Record<string, string> = { authorization }
  if (proof !== undefined) headers.dpop = proof
  return ctx.service.fetch(new Request(ctx.as.userinfo_endpoint as string, { method, headers }))
}

/** A proof for GET userinfo with `ath` of `token`; `claims` override. */
async function userinfoProof(ctx: DpopContext, key: DpopKey, token: string, claims: Record<string, unknown> = {}) {
  return handProof(ctx, key, {
    htm: 'GET',
    htu: ctx.as.userinfo_endpoint,
    ath: await accessTokenHash(token),
    ...claims,
  })
}

/** Expects a 401 with one DPoP challenge carrying `error`, `error_description` and `algs`. */
async function expectDpopChallenge(response: Response, error: string, description: string): Promise<void> {
  expect(response.status).toBe(error === 'insufficient_scope' ? 403 : 401)
  expect(response.headers.get('www-authenticate')).toBe(
    `DPoP realm="${ISSUER}", error="${error}", error_description="${wire(description)}", algs="${ALGS}"`,
  )
  expect(await response.json()).toEqual({ error, error_description: wire(description) })
}

describe('RFC 9449 §7.1 userinfo with DPoP-bound tokens', () => {
  it('UI-01 RFC 9449 §7.1: oauth4webapi userInfoRequest with the DPoP scheme and a proof → 200', async () => {
    const ctx = await dpopSetup()
    const { handle, token } = await boundUser(ctx)
    const response = await oauth.userInfoRequest(ctx.as, spaClient, token, { ...ctx.opts, DPoP: handle })
    expect(response.status).toBe(200)
    expect(response.headers.get('www-authenticate')).toBeNull()
    const claims = await oauth.processUserInfoResponse(ctx.as, spaClient, 'user-1', response)
    expect(claims).toMatchObject({ sub: 'user-1', email: 'alice@example.com' })
  })

  it('UI-02 RFC 9449 §7.1: POST userinfo with the DPoP scheme (htm POST) → 200', async () => {
    const ctx = await dpopSetup()
    const { key, token } = await boundUser(ctx)
    const proof = await userinfoProof(ctx, key, token, { htm: 'POST' })
    const response = await userinfo(ctx, `dpop ${token}`, proof, 'POST')
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ sub: 'user-1' })
  })

  it('RFC 9449 §7.2: a DPoP-bound token sent as a Bearer token → 401 invalid_token, DPoP challenge', async () => {
    const ctx = await dpopSetup()
    const { token } = await boundUser(ctx)
    const response = await userinfo(ctx, `Bearer ${token}`)
    await expectDpopChallenge(
      response,
      'invalid_token',
      'the access token is DPoP-bound: use the DPoP scheme with a proof',
    )
    // oauth4webapi reads the challenge: a WWWAuthenticateChallengeError with one dpop challenge.
    const viaClient = await oauth.userInfoRequest(ctx.as, spaClient, token, ctx.opts)
    await expect(oauth.processUserInfoResponse(ctx.as, spaClient, 'user-1', viaClient)).rejects.toMatchObject({
      cause: [{ scheme: 'dpop', parameters: { error: 'invalid_token', algs: ALGS } }],
    })
  })

  it('RFC 9449 §7.1 §4.3: no DPoP header, a proof without or with a wrong ath, for another URL → invalid_dpop_proof', async () => {
    const ctx = await dpopSetup()
    const { key, token } = await boundUser(ctx)
    const cases: [string | undefined, string][] = [
      [undefined, 'DPoP proof is missing'],
      [await userinfoProof(ctx, key, token, { ath: undefined }), 'DPoP proof "ath" is missing'],
      [await userinfoProof(ctx, key, `${token}x`), 'DPoP proof "ath" does not match the access token'],
      [
        await userinfoProof(ctx, key, token, { htu: ctx.as.token_endpoint }),
        'DPoP proof "htu" does not match the request URL',
      ],
      [await userinfoProof(ctx, key, token, { htm: 'POST' }), 'DPoP proof "htm" does not match the request method'],
    ]
    for (const [proof, description] of cases) {
      await expectDpopChallenge(await userinfo(ctx, `DPoP ${token}`, proof), 'invalid_dpop_proof', description)
    }
  })

  it('RFC 9449 §7.1 §6: a valid proof made with another key → 401 invalid_token (key binding)', async () => {
    const ctx = await dpopSetup()
    const { token } = await boundUser(ctx)
    const proof = await userinfoProof(ctx, await dpopKey(), token)
    await expectDpopChallenge(await userinfo(ctx, `DPoP ${token}`, proof), 'invalid_token', 'invalid DPoP key binding')
  })

  it('RFC 9449 §11.1: a proof replayed at userinfo → 401 invalid_dpop_proof', async () => {
    const ctx = await dpopSetup()
    const { key, token } = await boundUser(ctx)
    const proof = await userinfoProof(ctx, key, token)
    expect((await userinfo(ctx, `DPoP ${token}`, proof)).status).toBe(200)
    await expectDpopChallenge(
      await userinfo(ctx, `DPoP ${token}`, proof),
      'invalid_dpop_proof',
      'DPoP proof "jti" has already been used',
    )
  })

  it('RFC 9449 §7.1 §4.3 (12): an unbound token with the DPoP scheme → 401 invalid_token; as Bearer it works', async () => {
    const ctx = await dpopSetup()
    const tokens = await spaTokens(ctx)
    const key = await dpopKey()
    const proof = await userinfoProof(ctx, key, tokens.access_token)
    await expectDpopChallenge(
      await userinfo(ctx, `DPoP ${tokens.access_token}`, proof),
      'invalid_token',
      'the access token is not DPoP-bound',
    )
    const bearer = await userinfo(ctx, `Bearer ${tokens.access_token}`)
    expect(bearer.status).toBe(200)
  })

  it('UI-07 RFC 9449 §7.1: a bound token without openid → 403 insufficient_scope with a DPoP challenge', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const issued = await serviceToken(ctx, await handProof(ctx, key))
    const { access_token: token } = (await issued.json()) as { access_token: string }
    await expectDpopChallenge(
      await userinfo(ctx, `DPoP ${token}`, await userinfoProof(ctx, key, token)),
      'insufficient_scope',
      'the access token lacks the openid scope',
    )
  })

  it('UI-06: an invalid token with the DPoP scheme → 401 invalid_token with a DPoP challenge', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    await expectDpopChallenge(
      await userinfo(ctx, 'DPoP garbage', await userinfoProof(ctx, key, 'garbage')),
      'invalid_token',
      'the access token is invalid, expired or revoked',
    )
  })
})

describe('RFC 9449 §6.2 introspection of DPoP-bound tokens', () => {
  it('INT-02 RFC 9449 §6.2: a bound token → active, token_type DPoP, cnf.jkt; an unbound one → Bearer, no cnf', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const bound = (await (await serviceToken(ctx, await handProof(ctx, key))).json()) as { access_token: string }
    const plain = (await (await serviceToken(ctx)).json()) as { access_token: string }
    const client = { client_id: 'service' }
    const auth = oauth.ClientSecretBasic('service-secret')
    const introspect = async (token: string) =>
      oauth.processIntrospectionResponse(
        ctx.as,
        client,
        await oauth.introspectionRequest(ctx.as, client, auth, token, ctx.opts),
      )
    expect(await introspect(bound.access_token)).toMatchObject({
      active: true,
      client_id: 'service',
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
    })
    const unbound = await introspect(plain.access_token)
    expect(unbound).toMatchObject({ active: true, token_type: 'Bearer' })
    expect(unbound.cnf).toBeUndefined()
  })

  it('INT-02 RFC 9449 §6.2: a user token bound in the code flow is introspected with its cnf and token_type', async () => {
    const ctx = await dpopSetup()
    const key = await dpopKey()
    const tokens = await webTokensWithProof(ctx, key)
    const introspection = await oauth.introspectionRequest(ctx.as, webClient, webAuth, tokens.access_token, ctx.opts)
    expect(await oauth.processIntrospectionResponse(ctx.as, webClient, introspection)).toMatchObject({
      active: true,
      sub: 'user-1',
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
    })
  })
})
