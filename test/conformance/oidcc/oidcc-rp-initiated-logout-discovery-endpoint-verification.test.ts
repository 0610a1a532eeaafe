/**
 * #30, RP-Initiated Logout OP plan, module `oidcc-rp-initiated-logout-discovery-endpoint-verification`
 * (OIDCCRpInitiatedLogoutDiscoveryEndpointVerification): discovery has `end_session_endpoint`, a
 * valid https URL (CheckDiscEndSessionEndpoint, OIDC RP-Initiated Logout §2.1), and every endpoint
 * is https (CheckDiscEndpointAllEndpointsAreHttps).
 */
import { describe, expect, it } from 'vitest'
import { createSuite } from './suite.ts'

describe('#30 oidcc-rp-initiated-logout-discovery-endpoint-verification', () => {
  it('#30 oidcc-rp-initiated-logout-discovery-endpoint-verification (LO-01, DISC-06): end_session_endpoint is an https URL', async () => {
    const suite = await createSuite()
    const endSession = suite.as.end_session_endpoint as string
    expect(typeof endSession).toBe('string')
    expect(new URL(endSession).protocol).toBe('https:')
    for (const [name, value] of Object.entries(suite.as)) {
      if (name.endsWith('_endpoint')) expect(new URL(value as string).protocol, name).toBe('https:')
    }
  })
})
