/**
 * @module crypto/algorithms
 * Which algorithms the service signs with: the keyring keeps an active key for each, discovery
 * lists them as `id_token_signing_alg_values_supported` (OpenID Connect Discovery §3), and a client
 * may register any of them as its `idTokenSignedResponseAlg` (OpenID Connect Registration §2).
 */

/** The JWS algorithms the service signs with (keys it can generate and load). */
export type SigningAlgorithm = 'ES256' | 'ES384' | 'RS256' | 'PS256' | 'EdDSA'

/** Every `SigningAlgorithm`, for schemas. */
export const SIGNING_ALGS: readonly ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'] = [
  'ES256',
  'ES384',
  'RS256',
  'PS256',
  'EdDSA',
]

interface AlgorithmSettings {
  accessTokenSigningAlg: SigningAlgorithm
  idTokenSigningAlg: SigningAlgorithm
  /** `fapi2-security`: no RS256 (FAPI 2.0 Security Profile §5.4.1). */
  profile?: string | undefined
  keys?: { keys: ReadonlyArray<{ alg: SigningAlgorithm }> } | undefined
}

/**
 * The service's ID token alg first, then RS256 (OpenID Connect Core §15.1: every provider signs
 * with it), then the access tokens' alg; with keys given in options, the algs of those keys. A
 * resource server that takes its accepted algs from discovery (express-oauth2-jwt-bearer does)
 * thereby accepts the access tokens too.
 */
export function signingAlgorithms(settings: AlgorithmSettings): SigningAlgorithm[] {
  const rs256: SigningAlgorithm[] = settings.profile === 'fapi2-security' ? [] : ['RS256']
  const preferred: SigningAlgorithm[] = [settings.idTokenSigningAlg, ...rs256, settings.accessTokenSigningAlg]
  if (!settings.keys) return [...new Set(preferred)]
  const configured = new Set(settings.keys.keys.map((key) => key.alg))
  return [...new Set([...preferred.filter((alg) => configured.has(alg)), ...configured])]
}
