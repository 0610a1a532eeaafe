/**
 * #21: express-oauth2-jwt-bearer (Auth0's resource-server middleware for Express) accepts
 * Gatehouse's access tokens with nothing but `issuerBaseURL` and `audience`. It takes the algs it
 * accepts from discovery's `id_token_signing_alg_values_supported`, which lists every alg Gatehouse
 * signs with (its ID token alg, RS256, the access tokens' alg): before #21 it listed the ID token
 * algs only (RS256 by default), and the default ES256 access tokens failed with "Unexpected 'alg'
 * value". Gatehouse is served over
 * HTTP on 127.0.0.1; the library fetches `http:` URLs as given (no https requirement for
 * `issuerBaseURL`), so no escape hatch is needed.
 * CONFORMANCE: X-06 (RFC 9068 access tokens at a third-party resource server), DISC-04.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import { auth } from 'express-oauth2-jwt-bearer'
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic } from '../helpers/service.ts'
import { type Gatehouse, startGatehouse } from '../helpers_side/gatehouse.ts'

/** An Express API whose /api route is guarded by express-oauth2-jwt-bearer for `issuer`, audience api1. */
async function startApi(issuer: string): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express()
  // The scope api1 maps to the audience api1 (a scope's audience defaults to its name).
  app.get('/api', auth({ issuerBaseURL: issuer, audience: 'api1' }), (req, res) => {
    res.json({ sub: req.auth?.payload.sub, scope: req.auth?.payload.scope, alg: req.auth?.header.alg })
  })
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** The token with one character of its signature changed. */
function tamper(token: string): string {
  const last = token.at(-2) === 'A' ? 'B' : 'A'
  return `${token.slice(0, -2)}${last}${token.slice(-1)}`
}

describe.each([
  ['ES256', {}],
  ['EdDSA', { accessTokenSigningAlg: 'EdDSA' as const }],
] as const)('express-oauth2-jwt-bearer with Gatehouse access tokens signed %s', (alg, options) => {
  let gh: Gatehouse
  let api: Awaited<ReturnType<typeof startApi>>

  beforeAll(async () => {
    gh = await startGatehouse(options)
    api = await startApi(gh.issuer)
  })
  afterAll(async () => {
    await api?.close()
    await gh?.close()
  })

  it(`X-06: a client_credentials token (${alg}) is accepted by auth({ issuerBaseURL, audience }) → 200`, async () => {
    const discovery = (await (await fetch(`${gh.issuer}/.well-known/openid-configuration`)).json()) as {
      id_token_signing_alg_values_supported: string[]
    }
    // what the library turns into its allowed algs
    expect(discovery.id_token_signing_alg_values_supported).toContain(alg)
    const token = await gh.token()
    expect(decodeProtectedHeader(token)).toMatchObject({ alg, typ: 'at+jwt' })
    // jose v4 (the library's) verifies EdDSA (Ed25519) on Node: no limitation to document
    const response = await fetch(api.url, { headers: { authorization: `Bearer ${token}` } })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ sub: 'service', scope: 'api1', alg })
  })

  it('RFC 6750 §3.1: a tampered token, no token, or a token for another audience → 401', async () => {
    const token = await gh.token()
    const tampered = await fetch(api.url, { headers: { authorization: `Bearer ${tamper(token)}` } })
    expect(tampered.status).toBe(401)
    expect(tampered.headers.get('www-authenticate')).toContain('error="invalid_token"')
    expect((await fetch(api.url)).status).toBe(401)
    const now = gh.clock.now()
    const claims = { iss: gh.issuer, sub: 'service', exp: now + 600, iat: now, jti: 'j1', client_id: 'service' }
    const api2 = await gh.forge({ ...claims, aud: 'api2', scope: 'api2' }, { alg })
    const other = await fetch(api.url, { headers: { authorization: `Bearer ${api2}` } })
    expect(other.status).toBe(401)
    expect(other.headers.get('www-authenticate')).toContain(`error_description="Unexpected 'aud' value"`)
  })
})

describe('express-oauth2-jwt-bearer with a Gatehouse DPoP-bound token (RFC 9449 §7)', () => {
  let gh: Gatehouse
  let api: Awaited<ReturnType<typeof startApi>>

  beforeAll(async () => {
    gh = await startGatehouse()
    api = await startApi(gh.issuer)
  })
  afterAll(async () => {
    await api?.close()
    await gh?.close()
  })

  it('X-05: accepted with the DPoP scheme and a proof, refused as Bearer (skipped while the token endpoint issues Bearer only)', async (ctx) => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
    const handle = oauth.DPoP({}, { privateKey, publicKey })
    const as = { issuer: gh.issuer, token_endpoint: `${gh.issuer}/connect/token` }
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: 'service' },
      (_as, _client, _body, headers) => {
        headers.set('authorization', basic('service', 'service-secret'))
      },
      new URLSearchParams({ scope: 'api1' }),
      { DPoP: handle, [oauth.allowInsecureRequests]: true },
    )
    const body = (await response.json()) as { access_token: string; token_type: string }
    if (body.token_type !== 'DPoP') ctx.skip()
    const options = { DPoP: handle, [oauth.allowInsecureRequests]: true }
    const ok = await oauth.protectedResourceRequest(
      body.access_token,
      'GET',
      new URL(api.url),
      undefined,
      undefined,
      options,
    )
    expect(ok.status).toBe(200)
    expect(await calculateJwkThumbprint(await exportJWK(publicKey))).toBe(await handle.calculateThumbprint())
    const downgraded = await fetch(api.url, { headers: { authorization: `Bearer ${body.access_token}` } })
    expect(downgraded.status).toBe(401)
  })
})
