/**
 * #30, Basic OP plan, module `oidcc-idtoken-unsigned` (OIDCCIdTokenUnsigned, OP-IDToken-none). The
 * module registers a client with `id_token_signed_response_alg=none` and is skipped ("acceptable
 * for certification") when discovery's `id_token_signing_alg_values_supported` lacks `none`
 * (OIDCCCheckIdTokenSigningAlgValuesSupportedAlgNone). Gatehouse never issues unsigned ID tokens:
 * this holds it to the skip condition being true and to the claim behind it, so the suite's skip
 * stays an honest one.
 */
import { decodeProtectedHeader } from 'jose'
import { describe, expect, it } from 'vitest'
import { parseClientRegistration } from '../../../src/clients/registration.ts'
import { CLIENT_AUTH_VARIANTS, SUITE_CLIENTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-idtoken-unsigned ($method)', (client) => {
  it('#30 oidcc-idtoken-unsigned (DISC-11, IDT-08): none is not offered, cannot be registered and is never issued', async () => {
    const suite = await createSuite()
    const algs = suite.as.id_token_signing_alg_values_supported as string[]
    expect(algs).not.toContain('none')
    expect(() => parseClientRegistration({ ...SUITE_CLIENTS.client, idTokenSignedResponseAlg: 'none' })).toThrow(
      /idTokenSignedResponseAlg/,
    )
    const flow = await codeFlow(suite, { client })
    expect(decodeProtectedHeader(flow.idTokenRaw).alg).not.toBe('none')
    expect(flow.idTokenRaw.split('.')[2]).not.toBe('')
  })
})
