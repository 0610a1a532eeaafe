/**
 * #30, Basic OP plan, module `oidcc-ensure-request-with-unknown-parameter-succeeds`
 * (OIDCCEnsureRequestWithUnknownParameterSucceeds, OP-Req-NotUnderstood): an authorization request
 * with `extra=foobar`; unknown parameters must be ignored (OIDC Core §3.1.2.1), the flow succeeds.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-ensure-request-with-unknown-parameter-succeeds ($method)', (client) => {
  it('#30 oidcc-ensure-request-with-unknown-parameter-succeeds (AUTHZ-06): extra=foobar is ignored', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client, extra: { extra: 'foobar' } })
    expect(flow.request.url.searchParams.get('extra')).toBe('foobar')
    expect(flow.callback.searchParams.has('extra')).toBe(false)
  })
})
