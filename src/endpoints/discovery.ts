/**
 * @module endpoints/discovery
 * Provider metadata: OpenID Connect Discovery 1.0 §3 at /.well-known/openid-configuration and
 * RFC 8414 at /.well-known/oauth-authorization-server. It lists exactly what is implemented.
 */
import type { Context } from '../context.ts'
import { json } from '../http.ts'
import { signingAlgorithms } from '../crypto/index.ts'
import { ASSERTION_ALGORITHMS } from '../client_auth/index.ts'
import { dpopAlgorithms } from '../dpop/index.ts'
import { FAPI2_ALGORITHMS, allowsResponseMode, isFapi2 } from '../config/index.ts'
import { RESPONSE_MODES } from '../protocol/index.ts'

const SECRET_METHODS = ['client_secret_basic', 'client_secret_post']

/** The metadata document (computed once per service). */
export function metadata(ctx: Context): Record<string, unknown> {
  const { urls, config } = ctx
  const fapi2 = isFapi2(config)
  const assertionAlgs = fapi2 ? [...FAPI2_ALGORITHMS, 'Ed25519'] : [...ASSERTION_ALGORITHMS]
  const dpopAlgs = [...dpopAlgorithms(config)]
  return {
    issuer: config.issuer,
    authorization_endpoint: urls.authorization,
    token_endpoint: urls.token,
    userinfo_endpoint: urls.userinfo,
    jwks_uri: urls.jwks,
    end_session_endpoint: urls.logout,
    // OpenID Connect Back-Channel Logout 1.0 §2.1: logout tokens, always with sid.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    revocation_endpoint: urls.revocation,
    introspection_endpoint: urls.introspection,
    ...(config.dynamicClientRegistration ? { registration_endpoint: urls.registration } : {}),
    // RFC 8628 §4: the device authorization endpoint.
    device_authorization_endpoint: urls.deviceAuthorization,
    // OpenID CIBA Core 1.0 §4: poll and ping, no user code.
    backchannel_authentication_endpoint: urls.backchannelAuthentication,
    backchannel_token_delivery_modes_supported: ['poll', 'ping'],
    backchannel_user_code_parameter_supported: false,
    scopes_supported: ctx.scopes.names(),
    response_types_supported: ['code'],
    // Form Post Response Mode §2 (not under a profile that refuses it).
    response_modes_supported: RESPONSE_MODES.filter((mode) => allowsResponseMode(mode, config)),
    grant_types_supported: [
      'authorization_code',
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:token-exchange',
      'urn:ietf:params:oauth:grant-type:device_code',
      'urn:openid:params:grant-type:ciba',
      // RFC 7523 §2.1 with ID-JAGs (#45): only while an identity provider is trusted.
      ...(config.identityAssertion?.issuers?.length ? ['urn:ietf:params:oauth:grant-type:jwt-bearer'] : []),
    ],
    subject_types_supported: ['public'],
    // Every alg a client may register as its idTokenSignedResponseAlg (the service's default first).
    id_token_signing_alg_values_supported: signingAlgorithms(config),
    token_endpoint_auth_methods_supported: fapi2 ? ['private_key_jwt'] : [...SECRET_METHODS, 'private_key_jwt', 'none'],
    token_endpoint_auth_signing_alg_values_supported: assertionAlgs,
    introspection_endpoint_auth_methods_supported: fapi2 ? ['private_key_jwt'] : [...SECRET_METHODS, 'private_key_jwt'],
    introspection_endpoint_auth_signing_alg_values_supported: assertionAlgs,
    revocation_endpoint_auth_methods_supported: fapi2
      ? ['private_key_jwt']
      : [...SECRET_METHODS, 'private_key_jwt', 'none'],
    revocation_endpoint_auth_signing_alg_values_supported: assertionAlgs,
    code_challenge_methods_supported: fapi2 ? ['S256'] : ['S256', 'plain'],
    // RFC 9126: pushed authorization requests, required of every client when the service says so.
    pushed_authorization_request_endpoint: urls.par,
    require_pushed_authorization_requests: fapi2 || config.requirePushedAuthorizationRequests,
    // RFC 9449 §5.1: the algs a DPoP proof may be signed with.
    dpop_signing_alg_values_supported: dpopAlgs,
    claims_supported: ctx.scopes.allClaims(),
    // OpenID Connect Core §5.5.
    claims_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    prompt_values_supported: ['none', 'login', 'consent'],
    authorization_response_iss_parameter_supported: true,
    // draft-ietf-oauth-client-id-metadata-document §5: URL client ids are fetched.
    ...(config.clientIdMetadataDocuments ? { client_id_metadata_document_supported: true } : {}),
    // Grant Management for OAuth 2.0 §7.1: the grant management API and the actions of authorization
    // requests (a request without one gets a grant of its own, as before).
    grant_management_endpoint: urls.grantManagement,
    grant_management_actions_supported: ['query', 'revoke', 'create', 'merge', 'replace'],
    grant_management_action_required: false,
    // RFC 9396 §10: the authorization details types the service accepts.
    ...(config.authorizationDetailsTypes?.length
      ? { authorization_details_types_supported: config.authorizationDetailsTypes }
      : {}),
  }
}

/** Serves the metadata document (serialised once at start-up). */
export function handleDiscovery(document: string): Response {
  return new Response(document, {
    headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' },
  })
}

export async function handleJwks(ctx: Context): Promise<Response> {
  return json(await ctx.keyring.jwks(), { headers: { 'cache-control': 'public, max-age=60' } })
}
