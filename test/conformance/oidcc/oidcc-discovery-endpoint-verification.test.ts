/**
 * #30, Config OP plan, module `oidcc-discovery-endpoint-verification`
 * (OIDCCDiscoveryEndpointVerification, OP-Discovery-Config): the discovery document as the module
 * checks it, in its order: 200 with a JSON content type (OIDC Discovery §4); the discovery URL is
 * https and ends in /.well-known/openid-configuration (CheckDiscEndpointDiscoveryUrl); the issuer is
 * that URL's prefix (CheckDiscEndpointIssuer, trailing slash ignored) and a valid URL; members well
 * typed (ValidateServerMetadataAgainstSchema) and registered (CheckForUnexpectedParametersInServerMetadata,
 * a WARN, held here); response_types_supported has an OIDC response type; subject_types_supported
 * public or pairwise; RS256 among the ID token algs; the endpoints https; jwks_uri and a valid key
 * set; request/request_uri support told; RS256 among request object algs if listed (WARN);
 * claims_supported present (WARN); grant_types_supported a non-empty array; scopes_supported with
 * openid and valid scope syntax; locales in BCP 47 syntax and casing; every `*_endpoint` https;
 * code_challenge_methods_supported an array with S256 or plain.
 */
import { describe, expect, it } from 'vitest'
import { ISSUER } from '../../helpers/service.ts'
import { createSuite, fetchServerKeys } from './suite.ts'

/** OIDC Discovery §3, RFC 8414 §2 and the IANA OAuth Authorization Server Metadata registry. */
const REGISTERED = new Set([
  'issuer',
  'authorization_endpoint',
  'token_endpoint',
  'userinfo_endpoint',
  'jwks_uri',
  'registration_endpoint',
  'scopes_supported',
  'response_types_supported',
  'response_modes_supported',
  'grant_types_supported',
  'acr_values_supported',
  'subject_types_supported',
  'id_token_signing_alg_values_supported',
  'id_token_encryption_alg_values_supported',
  'id_token_encryption_enc_values_supported',
  'userinfo_signing_alg_values_supported',
  'userinfo_encryption_alg_values_supported',
  'userinfo_encryption_enc_values_supported',
  'request_object_signing_alg_values_supported',
  'request_object_encryption_alg_values_supported',
  'request_object_encryption_enc_values_supported',
  'token_endpoint_auth_methods_supported',
  'token_endpoint_auth_signing_alg_values_supported',
  'display_values_supported',
  'claim_types_supported',
  'claims_supported',
  'service_documentation',
  'claims_locales_supported',
  'ui_locales_supported',
  'claims_parameter_supported',
  'request_parameter_supported',
  'request_uri_parameter_supported',
  'require_request_uri_registration',
  'op_policy_uri',
  'op_tos_uri',
  'revocation_endpoint',
  'revocation_endpoint_auth_methods_supported',
  'revocation_endpoint_auth_signing_alg_values_supported',
  'introspection_endpoint',
  'introspection_endpoint_auth_methods_supported',
  'introspection_endpoint_auth_signing_alg_values_supported',
  'code_challenge_methods_supported',
  'end_session_endpoint',
  'check_session_iframe',
  'frontchannel_logout_supported',
  'frontchannel_logout_session_supported',
  'backchannel_logout_supported',
  'backchannel_logout_session_supported',
  'pushed_authorization_request_endpoint',
  'require_pushed_authorization_requests',
  'dpop_signing_alg_values_supported',
  'authorization_response_iss_parameter_supported',
  'prompt_values_supported',
  'client_id_metadata_document_supported',
  'mtls_endpoint_aliases',
  'tls_client_certificate_bound_access_tokens',
  'require_signed_request_object',
  'signed_metadata',
  'authorization_signing_alg_values_supported',
  'authorization_encryption_alg_values_supported',
  'authorization_encryption_enc_values_supported',
  'introspection_signing_alg_values_supported',
  'introspection_encryption_alg_values_supported',
  'introspection_encryption_enc_values_supported',
  'device_authorization_endpoint',
  'backchannel_authentication_endpoint',
  'backchannel_token_delivery_modes_supported',
  'backchannel_authentication_request_signing_alg_values_supported',
  'backchannel_user_code_parameter_supported',
  'authorization_details_types_supported',
  'protected_resources',
  // Grant Management for OAuth 2.0 §7.1 (#42 item 4).
  'grant_management_endpoint',
  'grant_management_actions_supported',
  'grant_management_action_required',
])

const URL_MEMBERS = [
  'issuer',
  'jwks_uri',
  'service_documentation',
  'op_policy_uri',
  'op_tos_uri',
  'check_session_iframe',
]
const BOOLEAN_MEMBERS = [
  'claims_parameter_supported',
  'request_parameter_supported',
  'request_uri_parameter_supported',
  'require_request_uri_registration',
  'require_pushed_authorization_requests',
  'authorization_response_iss_parameter_supported',
  'frontchannel_logout_supported',
  'frontchannel_logout_session_supported',
  'backchannel_logout_supported',
  'backchannel_logout_session_supported',
  // OpenID CIBA Core §4: a boolean.
  'backchannel_user_code_parameter_supported',
  'tls_client_certificate_bound_access_tokens',
  'client_id_metadata_document_supported',
]
/** RFC 6749 §3.3 scope-token. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/
/** BCP 47 language tag syntax (RFC 5646 §2.1, simplified: language, script, region, variants). */
const LANGUAGE_TAG = /^[a-zA-Z]{2,3}(-[a-zA-Z]{4})?(-([a-zA-Z]{2}|\d{3}))?(-([a-zA-Z\d]{5,8}|\d[a-zA-Z\d]{3}))*$/
/** RFC 5646 §2.1.1 canonical casing: lower-case language, title-case script, upper-case region. */
const CANONICAL_CASING = /^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|\d{3}))?(-[a-z\d]+)*$/

describe('#30 oidcc-discovery-endpoint-verification (Config OP)', () => {
  it('#30 oidcc-discovery-endpoint-verification (DISC-01, DISC-02, DISC-04–DISC-08, DISC-10–DISC-12, JWKS-01–JWKS-03): the discovery document passes every check of the module', async () => {
    const suite = await createSuite()
    const discoveryUrl = `${ISSUER}/.well-known/openid-configuration`
    const response = await suite.fetch(new Request(discoveryUrl))
    // EnsureDiscoveryEndpointResponseStatusCodeIs200, CheckDiscoveryEndpointReturnedJsonContentType
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json\b/)
    const doc = (await response.json()) as Record<string, unknown>

    // CheckDiscEndpointDiscoveryUrl, CheckDiscEndpointIssuer, CheckDiscEndpointIssuerIsValidUrl
    expect(new URL(discoveryUrl).protocol).toBe('https:')
    expect(discoveryUrl.endsWith('/.well-known/openid-configuration')).toBe(true)
    const issuer = doc.issuer as string
    expect(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`).toBe(discoveryUrl)
    const issuerUrl = new URL(issuer)
    expect(issuerUrl.search).toBe('')
    expect(issuerUrl.hash).toBe('')

    // ValidateServerMetadataAgainstSchema, CheckForUnexpectedParametersInServerMetadata
    for (const [name, value] of Object.entries(doc)) {
      expect(REGISTERED.has(name), `unregistered metadata ${name}`).toBe(true)
      if (name.endsWith('_supported') && !BOOLEAN_MEMBERS.includes(name)) {
        expect(Array.isArray(value), name).toBe(true)
        for (const item of value as unknown[]) expect(typeof item, name).toBe('string')
      }
      if (BOOLEAN_MEMBERS.includes(name)) expect(typeof value, name).toBe('boolean')
      if (URL_MEMBERS.includes(name) || name.endsWith('_endpoint'))
        expect(() => new URL(value as string), name).not.toThrow()
    }

    // OIDCCCheckDiscEndpointResponseTypesSupported (static client: the plan's variant)
    const oidcResponseTypes = [
      'code',
      'id_token',
      'code id_token',
      'id_token token',
      'code token',
      'code id_token token',
    ]
    expect((doc.response_types_supported as string[]).some((t) => oidcResponseTypes.includes(t))).toBe(true)
    // CheckDiscEndpointSubjectTypesSupported
    expect((doc.subject_types_supported as string[]).some((t) => t === 'public' || t === 'pairwise')).toBe(true)
    // OIDCCCheckDiscEndpointIdTokenSigningAlgValuesSupported
    expect(doc.id_token_signing_alg_values_supported).toContain('RS256')
    // OIDCCCheckDiscEndpointUserinfoSigningAlgValuesSupported (if present)
    if (doc.userinfo_signing_alg_values_supported !== undefined)
      expect(doc.userinfo_signing_alg_values_supported).not.toContain('none')

    // CheckDiscEndpointAuthorizationEndpoint, TokenEndpoint, UserinfoEndpoint, RegistrationEndpoint
    for (const name of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint']) {
      expect(new URL(doc[name] as string).protocol, name).toBe('https:')
    }
    if (doc.registration_endpoint !== undefined)
      expect(new URL(doc.registration_endpoint as string).protocol).toBe('https:')

    // CheckJwksUri, FetchServerKeys, ValidateJwksSequence
    expect(new URL(doc.jwks_uri as string).protocol).toBe('https:')
    const jwks = await fetchServerKeys(suite.as, suite.fetch)
    for (const key of jwks.keys) expect(['RSA', 'EC', 'OKP']).toContain(key.kty)

    // CheckDiscEndpointRequestParameterSupported / RequestUriParameterSupported (INFO): stated either way.
    expect(typeof doc.request_parameter_supported).toBe('boolean')
    expect(typeof doc.request_uri_parameter_supported).toBe('boolean')
    // CheckDiscEndpointRequestObjectSigningAlgValuesSupportedIncludesRS256 (if present)
    if (doc.request_object_signing_alg_values_supported !== undefined)
      expect(doc.request_object_signing_alg_values_supported).toContain('RS256')
    // CheckDiscEndpointClaimsParameterSupported (INFO), OIDCCCheckDiscEndpointClaimsSupported (WARN)
    expect(typeof doc.claims_parameter_supported).toBe('boolean')
    expect(Array.isArray(doc.claims_supported)).toBe(true)
    expect(doc.claims_supported).toContain('sub')

    // OIDCCCheckDiscEndpointGrantTypesSupported
    expect((doc.grant_types_supported as string[]).length).toBeGreaterThan(0)
    // CheckDiscEndpointScopesSupportedContainsOpenId, CheckDiscEndpointScopesSupportedSyntax
    expect(doc.scopes_supported).toContain('openid')
    for (const scope of doc.scopes_supported as string[]) expect(scope).toMatch(SCOPE_TOKEN)
    // CheckDiscEndpointLocalesSyntax, CheckDiscEndpointLocalesCanonicalCasing
    for (const name of ['ui_locales_supported', 'claims_locales_supported']) {
      for (const tag of (doc[name] as string[] | undefined) ?? []) {
        expect(tag, name).toMatch(LANGUAGE_TAG)
        expect(tag, name).toMatch(CANONICAL_CASING)
      }
    }
    // CheckDiscEndpointAllEndpointsAreHttps
    for (const [name, value] of Object.entries(doc)) {
      if (name.endsWith('_endpoint')) expect(new URL(value as string).protocol, name).toBe('https:')
    }
    // EnsureServerConfigurationCodeChallengeMethodsSupportedIsAnArray
    const methods = doc.code_challenge_methods_supported as string[]
    expect(Array.isArray(methods)).toBe(true)
    expect(methods.some((m) => m === 'S256' || m === 'plain')).toBe(true)
  })
})
