/**
 * #30, Basic OP plan, module `oidcc-ensure-request-with-valid-pkce-succeeds`
 * (OIDCCEnsureRequestWithValidPkceSucceeds): an S256 code_challenge and the matching code_verifier
 * at the token endpoint (RFC 7636); the flow must succeed. A wrong verifier is refused, so the
 * challenge was really checked.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import {
  CLIENT_AUTH_VARIANTS,
  buildRequest,
  checkCodeCallback,
  codeFlow,
  createSuite,
  runAuthorization,
} from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-ensure-request-with-valid-pkce-succeeds ($method)', (client) => {
  it('#30 oidcc-ensure-request-with-valid-pkce-succeeds (AUTHZ-30, CODE-07, CODE-08): S256 challenge and verifier succeed', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client, pkce: true })
    expect(flow.request.params.get('code_challenge_method')).toBe('S256')
    expect(suite.as.code_challenge_methods_supported).toContain('S256')

    const request = await buildRequest(suite.as, { client, pkce: true })
    const { callback } = await runAuthorization(suite.browser, request.url)
    const params = checkCodeCallback(suite, callback, request, client)
    const response = await oauth.authorizationCodeGrantRequest(
      suite.as,
      client.client,
      client.auth,
      params,
      request.params.get('redirect_uri') as string,
      oauth.generateRandomCodeVerifier(),
      suite.opts,
    )
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: 'invalid_grant' })
  })
})
