/**
 * #30, Basic OP plan, module `oidcc-ensure-post-request-succeeds` (OIDCCEnsurePostRequestSucceeds):
 * the authorization request is sent as a form POST (OIDC Core §3.1.2.1: GET and POST must be
 * supported); the sign-in completes and the redirect_uri is called with a code.
 */
import { describe, expect, it } from 'vitest'
import {
  CLIENT_AUTH_VARIANTS,
  buildRequest,
  checkCodeCallback,
  checkTokenResponse,
  checkUserinfo,
  createSuite,
  redeem,
  runAuthorization,
} from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-ensure-post-request-succeeds ($method)', (client) => {
  it('#30 oidcc-ensure-post-request-succeeds (AUTHZ-02): a POSTed authorization request completes', async () => {
    const suite = await createSuite()
    const request = await buildRequest(suite.as, { client })
    const endpoint = suite.as.authorization_endpoint as string
    const { callback } = await runAuthorization(suite.browser, {
      url: endpoint,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: request.params.toString(),
      },
    })
    const params = checkCodeCallback(suite, callback, request, client)
    const tokens = await checkTokenResponse(suite, await redeem(suite, params, request, client), request, client)
    await checkUserinfo(suite, tokens.response.access_token, tokens.idToken.sub)
    expect(tokens.idToken.nonce).toBe(request.nonce)
  })
})
