/**
 * #30, Basic OP plan, module `oidcc-idtoken-signature` (OIDCCIdTokenSignature, OP-IDToken-Signature
 * and OP-IDToken-kid): a client that names no ID token alg gets RS256 ID tokens with a `kid`
 * (EnsureIdTokenContainsKid, EnsureIdTokenSignatureIsRS256), that verify against the published
 * key with that kid. The suite runs it with dynamically registered clients only; here the static
 * clients, which register no alg either, are held to it.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-idtoken-signature ($method)', (client) => {
  it('#30 oidcc-idtoken-signature (IDT-08, JWKS-03, JWKS-05): RS256 with a kid of the JWKS by default', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client })
    expect(flow.header.alg).toBe('RS256')
    expect(typeof flow.header.kid).toBe('string')
    const key = suite.jwks.keys.find((k) => k.kid === flow.header.kid)
    expect(key?.kty).toBe('RSA')
  })
})
