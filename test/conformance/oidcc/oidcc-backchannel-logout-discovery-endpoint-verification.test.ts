/**
 * #30, Back-Channel Logout OP plan (`oidcc-backchannel-rp-initiated-logout-certification-test-plan`,
 * OIDCCBackchannelRpInitiatedLogoutTestPlan), module
 * `oidcc-backchannel-logout-discovery-endpoint-verification`
 * (OIDCCBackchannelLogoutDiscoveryEndpointVerification; suite source: openid-certification/conformance-suite,
 * src/main/java/net/openid/conformance/openid/, read at commits a288bed and c3aa7e2): every endpoint is
 * https (CheckDiscEndpointAllEndpointsAreHttps), `backchannel_logout_supported` is true
 * (CheckDiscEndpointBackchannelLogoutSupported, OIDCBCL-2.1), `backchannel_logout_session_supported`
 * is true (CheckDiscEndpointBackchannelLogoutSessionSupported: certification requires `sid`), and
 * `end_session_endpoint` is an https URL (CheckDiscEndSessionEndpoint, OIDCBCL-3, OIDCRIL-2.1).
 */
import { describe, expect, it } from 'vitest'
import { backchannelSetup } from './suite.ts'

describe('#30 oidcc-backchannel-logout-discovery-endpoint-verification', () => {
  it('#30 oidcc-backchannel-logout-discovery-endpoint-verification: back-channel logout with sessions, https end_session_endpoint', async () => {
    const { as } = await backchannelSetup()
    for (const [name, value] of Object.entries(as)) {
      if (name.endsWith('_endpoint')) expect(new URL(value as string).protocol, name).toBe('https:')
    }
    expect(as.backchannel_logout_supported).toBe(true)
    expect(as.backchannel_logout_session_supported).toBe(true)
    expect(typeof as.end_session_endpoint).toBe('string')
    expect(new URL(as.end_session_endpoint as string).protocol).toBe('https:')
  })
})
