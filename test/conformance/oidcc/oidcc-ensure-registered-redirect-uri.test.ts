/**
 * #30, Basic OP plan, module `oidcc-ensure-registered-redirect-uri` (OIDCCEnsureRegisteredRedirectUri,
 * OP-redirect_uri-NotReg): the request's redirect_uri is the registered one with a random suffix
 * (CreateBadRedirectUriByAppending). The OP must show an error page (ExpectRedirectUriErrorPage,
 * OIDC Core §3.1.2.1, RFC 6749 §3.1.2.4); a redirect to either URI fails the module.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, REDIRECT_URI, buildRequest, createSuite, randomString } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-ensure-registered-redirect-uri ($method)', (client) => {
  it('#30 oidcc-ensure-registered-redirect-uri (AUTHZ-11, AUTHZ-15): an error page, no redirect to either URI', async () => {
    const suite = await createSuite()
    const request = await buildRequest(suite.as, { client, redirectUri: REDIRECT_URI + randomString(10) })
    const result = await suite.browser.navigate(request.url.href)
    expect(result.callback).toBeUndefined()
    const page = result.page as NonNullable<typeof result.page>
    expect(page.status).toBe(400)
    expect(page.response.headers.get('location')).toBeNull()
    expect(page.response.headers.get('content-type')).toMatch(/^text\/html\b/)
    expect(page.html).toContain('redirect_uri')
    expect(page.html).not.toContain(REDIRECT_URI)
  })
})
