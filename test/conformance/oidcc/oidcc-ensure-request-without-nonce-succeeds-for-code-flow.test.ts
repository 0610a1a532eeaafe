/**
 * #30, Basic OP plan, module `oidcc-ensure-request-without-nonce-succeeds-for-code-flow`
 * (OIDCCEnsureRequestWithoutNonceSucceedsForCodeFlow, OP-nonce-NoReq-code): nonce is optional in
 * the code flow (OIDC Core §3.1.2.1); a request without it gets a code and the flow completes,
 * with no nonce in the ID token.
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

describe.each(CLIENT_AUTH_VARIANTS)(
  '#30 oidcc-ensure-request-without-nonce-succeeds-for-code-flow ($method)',
  (client) => {
    it('#30 oidcc-ensure-request-without-nonce-succeeds-for-code-flow (AUTHZ-08, IDT-06): code issued, flow completes', async () => {
      const suite = await createSuite()
      const flow = await codeFlow(suite, { client, nonceLength: null })
      expect(flow.request.params.has('nonce')).toBe(false)
      expect(flow.idToken).not.toHaveProperty('nonce')
    })
  },
)
