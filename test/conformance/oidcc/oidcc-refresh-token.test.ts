/**
 * #30, Basic OP plan, module `oidcc-refresh-token` (OIDCCRefreshToken, AbstractOIDCCMultipleClient):
 * scope `openid offline_access` (discovery lists offline_access) with `prompt=consent` (OIDC Core
 * §11), then RefreshTokenRequestSteps: the refresh token has only VSCHARs (RFC 6749 A.17); the
 * refresh request (with `scope`, after WaitForOneSecond) answers 200, JSON, `Cache-Control:
 * no-store`, token_type Bearer, an access token of VSCHARs with enough entropy, a valid expires_in,
 * a refresh token ≥ 128 bits long with enough entropy, and an ID token consistent with the first
 * (CompareIdTokenClaims, OIDC Core §12.2: same iss, sub, aud, azp, auth_time; a new iat); the new
 * access token works at UserInfo. Then the second client's flow (a 43-character nonce, refresh
 * without scope), and its refresh token used by the first client must get 400 JSON invalid_grant
 * (RefreshTokenRequestExpectingErrorSteps).
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import {
  CLIENT2,
  CLIENT_AUTH_VARIANTS,
  type Suite,
  type SuiteClient,
  checkIdToken,
  checkUserinfo,
  codeFlow,
  createSuite,
  shannonEntropy,
} from './suite.ts'

const VSCHAR = /^[\x20-\x7e]+$/

async function refreshAndCompare(suite: Suite, client: SuiteClient, withScope: boolean, nonceLength?: number) {
  expect(suite.as.scopes_supported).toContain('offline_access')
  const first = await codeFlow(suite, {
    client,
    scope: 'openid offline_access',
    extra: { prompt: 'consent' },
    ...(nonceLength !== undefined ? { nonceLength } : {}),
  })
  const refreshToken = first.response.refresh_token as string
  expect(typeof refreshToken).toBe('string')
  expect(refreshToken).toMatch(VSCHAR)
  expect(suite.as.grant_types_supported).toContain('refresh_token')

  suite.clock.advance(1)
  const response = await oauth.refreshTokenGrantRequest(suite.as, client.client, client.auth, refreshToken, {
    ...suite.opts,
    ...(withScope ? { additionalParameters: { scope: 'openid offline_access' } } : {}),
  })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
  expect(response.headers.get('cache-control')).toContain('no-store')
  const raw = (await response.clone().json()) as Record<string, unknown>
  expect(String(raw.token_type).toLowerCase()).toBe('bearer')
  expect(raw.access_token).toMatch(VSCHAR)
  expect(shannonEntropy(raw.access_token as string)).toBeGreaterThan(128)
  expect(raw.expires_in).toBeGreaterThan(0)
  expect(raw.expires_in).toBeLessThanOrEqual(31_536_000)
  if (raw.refresh_token !== undefined) {
    expect(new TextEncoder().encode(raw.refresh_token as string).length * 8).toBeGreaterThanOrEqual(128)
    expect(shannonEntropy(raw.refresh_token as string)).toBeGreaterThan(96)
  }
  const refreshed = await oauth.processRefreshTokenResponse(suite.as, client.client, response)
  if (refreshed.id_token !== undefined) {
    const second = await checkIdToken(suite, refreshed.id_token, {
      client,
      nonce: null,
      accessToken: refreshed.access_token,
    })
    expect(second.iss).toBe(first.idToken.iss)
    expect(second.sub).toBe(first.idToken.sub)
    expect(second.aud).toEqual(first.idToken.aud)
    expect(second.azp).toEqual(first.idToken.azp)
    expect(second.auth_time).toBe(first.idToken.auth_time)
    expect(second.iat).not.toBe(first.idToken.iat)
  }
  await checkUserinfo(suite, refreshed.access_token, first.idToken.sub)
  return { first, refreshed, refreshToken: (refreshed.refresh_token as string | undefined) ?? refreshToken }
}

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-refresh-token ($method)', (client) => {
  it('#30 oidcc-refresh-token (RT-01, RT-02, RT-03, RT-06): refresh works, the ID token stays consistent, tokens are bound to their client', async () => {
    const suite = await createSuite()
    const one = await refreshAndCompare(suite, client, true)
    expect(one.refreshed.id_token).toBeDefined()
    const two = await refreshAndCompare(suite, CLIENT2, false, 43)

    // Client 2's refresh token presented by client 1.
    const stolen = await oauth.refreshTokenGrantRequest(
      suite.as,
      client.client,
      client.auth,
      two.refreshToken,
      suite.opts,
    )
    expect(stolen.status).toBe(400)
    expect(stolen.headers.get('content-type')).toMatch(/^application\/json\b/)
    expect(await stolen.json()).toMatchObject({ error: 'invalid_grant' })
  })
})
