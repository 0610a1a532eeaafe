/**
 * #30, Basic OP plan, module `oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported`
 * (OIDCCRequestUriUnsignedSupportedCorrectlyOrRejectedAsUnsupported, OP-request_uri-Unsigned): a
 * `request_uri` pointing at an unsigned request object hosted by the suite (state and nonce only
 * in the object). The OP must complete the authorization or answer `request_uri_not_supported`
 * (the module is then skipped as permitted). Gatehouse takes only its own pushed request_uris
 * (RFC 9126) and says `request_uri_parameter_supported: false`: an error redirect with iss, no
 * code, and the suite's URL is never fetched. The suite runs the module with dynamic clients only.
 */
import { describe, expect, it } from 'vitest'
import {
  BASE_URL,
  CLIENT_AUTH_VARIANTS,
  buildRequest,
  checkErrorCallback,
  createSuite,
  randomString,
  requestObjectUrl,
} from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)(
  '#30 oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported ($method)',
  (client) => {
    it('#30 oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported (AUTHZ-31, DISC-12): request_uri_not_supported', async () => {
      const suite = await createSuite()
      expect(suite.as.request_uri_parameter_supported).toBe(false)
      const request = await buildRequest(suite.as, { client })
      const claims = Object.fromEntries(request.params)
      // CreateRandomRequestUriWithFragment: a URL of the suite, with a fragment.
      const requestUri = `${BASE_URL}/requesturi/${randomString(32)}#${randomString(8)}`
      const url = requestObjectUrl(suite.as, request.params, claims, { request_uri: requestUri })
      const fetched: string[] = []
      const original = globalThis.fetch
      globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
        fetched.push(String(input instanceof Request ? input.url : input))
        return original(input, init)
      }
      try {
        const result = await suite.browser.navigate(url.href)
        expect(result.page, 'a page: the request_uri was neither processed nor refused').toBeUndefined()
        const error = checkErrorCallback(suite, result.callback as URL, { ...request, state: undefined })
        expect(error).toBe('request_uri_not_supported')
      } finally {
        globalThis.fetch = original
      }
      expect(fetched).toEqual([])
    })
  },
)
