/**
 * #30, Basic OP plan, module `oidcc-response-type-missing` (OIDCCResponseTypeMissing,
 * OP-Response-Missing): an authorization request without response_type. The OP must redirect
 * back with `invalid_request` or `unsupported_response_type` (state intact, correct iss, no code)
 * or show an error page; Gatehouse redirects with invalid_request (RFC 6749 §4.1.2.1).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, buildRequest, checkErrorCallback, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-response-type-missing ($method)', (client) => {
  it('#30 oidcc-response-type-missing (AUTHZ-17, AUTHZ-20): an error redirect in the query, never a code', async () => {
    const suite = await createSuite()
    const request = await buildRequest(suite.as, { client, omit: ['response_type'] })
    const result = await suite.browser.navigate(request.url.href)
    expect(result.page).toBeUndefined()
    const callback = result.callback as URL
    // The response must be in the query, as no response_type was given.
    expect(callback.hash).toBe('')
    const error = checkErrorCallback(suite, callback, request)
    // CheckErrorFromAuthorizationEndpointErrorInvalidRequestOrUnsupportedResponseType
    expect(['invalid_request', 'unsupported_response_type']).toContain(error)
  })
})
