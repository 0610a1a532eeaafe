/**
 * #30, Basic OP plan, module `oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported`
 * (OIDCCUnsignedRequestObjectSupportedCorrectlyOrRejectedAsUnsupported, OP-request-Unsigned): an
 * unsigned request object by value (`request=`), with state and nonce only inside it. The OP must
 * either process it, or answer `request_not_supported` (OIDC Core §3.1.2.6, §6); ignoring it fails.
 * Gatehouse does not support request objects and says so in discovery
 * (`request_parameter_supported: false`): an error redirect to the verified redirect_uri with iss,
 * no code, and no state (the module does not check state then, as it was only in the object).
 */
import { describe, expect, it } from 'vitest'
import {
  CLIENT_AUTH_VARIANTS,
  buildRequest,
  checkErrorCallback,
  createSuite,
  requestObjectUrl,
  unsignedRequestObject,
} from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)(
  '#30 oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported ($method)',
  (client) => {
    it('#30 oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported (AUTHZ-31, DISC-12): request_not_supported', async () => {
      const suite = await createSuite()
      expect(suite.as.request_parameter_supported).toBe(false)
      expect((suite.as.request_object_signing_alg_values_supported as string[] | undefined) ?? []).not.toContain('none')
      const request = await buildRequest(suite.as, { client })
      const claims = Object.fromEntries(request.params)
      const url = requestObjectUrl(suite.as, request.params, claims, { request: unsignedRequestObject(claims) })
      expect(url.searchParams.has('state')).toBe(false)
      expect(url.searchParams.has('nonce')).toBe(false)
      const result = await suite.browser.navigate(url.href)
      expect(result.page, 'a page: the request object was neither processed nor refused').toBeUndefined()
      const error = checkErrorCallback(suite, result.callback as URL, { ...request, state: undefined })
      expect(error).toBe('request_not_supported')
    })
  },
)
