/**
 * #44 item 4: the token endpoint's skeleton for the usual token response is exactly
 * `JSON.stringify` of the response, and anything the skeleton cannot write goes through it.
 */
import { describe, expect, it } from 'vitest'
import { tokenResponseText } from '../../../src/endpoints/token.ts'
import { PLAIN_ACCESS_TOKEN, type TokenResponse } from '../../../src/grants/index.ts'

const JWS = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzZXJ2aWNlIn0.c2lnbmF0dXJl-_'

describe('tokenResponseText', () => {
  it.each([
    { access_token: JWS, token_type: 'Bearer', expires_in: 3600 },
    { access_token: JWS, token_type: 'DPoP', expires_in: 1 },
    { access_token: 'opaque_token-1', token_type: 'N_A', expires_in: 0 },
  ] as TokenResponse[])('#44 item 4: the usual answer from the skeleton is JSON.stringify: %o', (body) => {
    expect(tokenResponseText(body)).toBe(JSON.stringify(body))
    expect(JSON.parse(tokenResponseText(body))).toEqual(body)
  })

  it.each([
    // Characters JSON escapes, and characters no base64url token holds.
    { access_token: 'a"b', token_type: 'Bearer', expires_in: 3600 },
    { access_token: 'a\\b', token_type: 'Bearer', expires_in: 3600 },
    { access_token: 'a\u0000b\u001f', token_type: 'Bearer', expires_in: 3600 },
    { access_token: 'a\ud800b', token_type: 'Bearer', expires_in: 3600 },
    { access_token: 'é', token_type: 'Bearer', expires_in: 3600 },
    { access_token: '', token_type: 'Bearer', expires_in: 3600 },
    // Lifetimes that are not safe integers.
    { access_token: JWS, token_type: 'Bearer', expires_in: 1.5 },
    { access_token: JWS, token_type: 'Bearer', expires_in: Number.NaN },
    { access_token: JWS, token_type: 'Bearer', expires_in: 2 ** 60 },
    { access_token: JWS, token_type: 'Bearer', expires_in: -0 },
    // Other members, other orders, another type.
    { access_token: JWS, token_type: 'Bearer', expires_in: 3600, scope: 'api1' },
    { access_token: JWS, token_type: 'Bearer', expires_in: 3600, refresh_token: 'r' },
    { token_type: 'Bearer', access_token: JWS, expires_in: 3600 },
    { access_token: JWS, token_type: 'bearer', expires_in: 3600 },
    { access_token: JWS, token_type: 'Bearer', expires_in: 3600, id_token: undefined },
  ] as TokenResponse[])('#44 item 4: any other answer is JSON.stringify: %o', (body) => {
    expect(tokenResponseText(body)).toBe(JSON.stringify(body))
  })

  it('#44 item 4: a token the grant marked a compact JWS it signed is written unscanned, and the marker is no member', () => {
    const body: TokenResponse = {
      access_token: JWS,
      token_type: 'Bearer',
      expires_in: 3600,
      [PLAIN_ACCESS_TOKEN]: true,
    }
    expect(tokenResponseText(body)).toBe(JSON.stringify(body))
    expect(Object.keys(body)).toEqual(['access_token', 'token_type', 'expires_in'])
    // The marker vouches for the token only: any other shape still goes through JSON.stringify.
    const other: TokenResponse = { ...body, scope: 'a"b' }
    expect(tokenResponseText(other)).toBe(JSON.stringify(other))
  })
})
