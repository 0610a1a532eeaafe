/**
 * #30, Basic OP plan, module `oidcc-ensure-request-object-with-redirect-uri`
 * (OIDCCEnsureRequestObjectWithRedirectUri): the request object (by value, unsigned) carries the
 * registered redirect_uri, the query an invalid one (AddInvalidRedirectUriToAuthorizationRequest:
 * the registered path + `_invalid`). The OP must use the object's value and succeed (OIDC Core
 * §6.1), or show an invalid redirect_uri error page (ExpectRedirectUriErrorPage). Redirecting
 * `request_not_supported` to the registered URI fails the module
 * (EnsureOPDoesNotUseDefaultRedirectUriInCaseOfInvalidRedirectUri). Gatehouse checks the query's
 * redirect_uri before anything else: the error page.
 */
import { describe, expect, it } from 'vitest'
import {
  CLIENT_AUTH_VARIANTS,
  REDIRECT_URI,
  buildRequest,
  createSuite,
  requestObjectUrl,
  unsignedRequestObject,
} from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-ensure-request-object-with-redirect-uri ($method)', (client) => {
  it('#30 oidcc-ensure-request-object-with-redirect-uri (AUTHZ-31, AUTHZ-15): an invalid redirect_uri error page, no redirect', async () => {
    const suite = await createSuite()
    const request = await buildRequest(suite.as, { client })
    const claims = Object.fromEntries(request.params)
    const query = new URLSearchParams(request.params)
    query.set('redirect_uri', `${REDIRECT_URI}_invalid`)
    const url = requestObjectUrl(suite.as, query, claims, { request: unsignedRequestObject(claims) })
    expect(url.searchParams.get('redirect_uri')).toBe(`${REDIRECT_URI}_invalid`)
    const result = await suite.browser.navigate(url.href)
    expect(result.callback, 'redirected although the query redirect_uri is invalid').toBeUndefined()
    const page = result.page as NonNullable<typeof result.page>
    expect(page.status).toBe(400)
    expect(page.html).toContain('redirect_uri')
  })
})
