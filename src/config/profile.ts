/**
 * @module config/profile
 * The per-request policies that the `fapi2-security` profile (FAPI 2.0 Security Profile §5), the
 * service options and a client's registration decide together: whether authorization requests
 * must be pushed (RFC 9126), tokens DPoP-bound (RFC 9449), PKCE used, and how a client may
 * authenticate. Each function is the one place its rule lives.
 */
import type { Config } from './schema.ts'
import type { SigningAlgorithm } from '../crypto/index.ts'
import type { ClientRecord } from '../storage/index.ts'

/** FAPI 2.0 Security Profile §5.4.1: PS256, ES256 and EdDSA (Ed25519) only. */
export const FAPI2_ALGORITHMS: readonly SigningAlgorithm[] = ['PS256', 'ES256', 'EdDSA']
/** FAPI 2.0 Security Profile §5.3.2.1: authorization codes live at most 60 seconds. */
export const FAPI2_MAX_CODE_TTL = 60

type ProfileSettings = Pick<Config, 'profile' | 'requirePushedAuthorizationRequests'>

export function isFapi2(config: Pick<Config, 'profile'>): boolean {
  return config.profile === 'fapi2-security'
}

/** RFC 9126 §5 / FAPI 2.0 §5.3.2.2: the client must push its authorization requests first. */
export function requiresPushedRequests(client: ClientRecord, config: ProfileSettings): boolean {
  return (
    isFapi2(config) || config.requirePushedAuthorizationRequests || client.requirePushedAuthorizationRequests === true
  )
}

/** RFC 9449 / FAPI 2.0 §5.3.2.1: the client's access tokens must be sender-constrained with DPoP. */
export function requiresDpop(client: ClientRecord, config: Pick<Config, 'profile'>): boolean {
  return isFapi2(config) || client.requireDpop === true
}

/** PKCE `plain` is allowed only where the client may use it and no profile forbids it (FAPI 2.0 §5.3.2.2). */
export function allowsPlainPkce(client: ClientRecord, config: Pick<Config, 'profile'>): boolean {
  return client.allowPlainPkce && !isFapi2(config)
}

/** FAPI 2.0 §5.3.2.2: PKCE (S256) for every client, confidential ones too. */
export function requiresPkce(client: ClientRecord, config: Pick<Config, 'profile'>): boolean {
  return client.requirePkce || isFapi2(config)
}

/** The code lifetime for the client: its own or the service's, capped at 60 s under FAPI 2.0. */
export function codeTtl(client: ClientRecord, config: Pick<Config, 'profile' | 'authorizationCodeTtl'>): number {
  const ttl = client.lifetimes.authorizationCode ?? config.authorizationCodeTtl
  return isFapi2(config) ? Math.min(ttl, FAPI2_MAX_CODE_TTL) : ttl
}

/**
 * Whether the profile admits a response mode. The FAPI 2.0 Security Profile (Final) sets no rule on
 * response modes (§5.3.2.2 asks for response_type code and `iss` per RFC 9207, nothing about
 * `response_mode`), so refusing `form_post` under `fapi2-security` is Gatehouse's narrowing, which
 * §5.1.2 permits (fewer choices, no mandatory behaviour removed): the FAPI 2.0 conformance plans
 * test the plain query response only (`plain_response`; JARM is not certified), so the profile
 * offers that one mode (docs/certification.md, "FAPI 2.0 and response_mode=form_post").
 */
export function allowsResponseMode(mode: string, config: Pick<Config, 'profile'>): boolean {
  return mode === 'query' || (mode === 'form_post' && !isFapi2(config))
}

/**
 * Why the profile refuses this client, or undefined: FAPI 2.0 §5.3.2.1 admits only confidential
 * clients, authenticating with private_key_jwt (or mTLS, which Gatehouse does not offer).
 */
export function profileRefusal(client: ClientRecord, config: Pick<Config, 'profile'>): string | undefined {
  if (!isFapi2(config)) return undefined
  if (client.tokenEndpointAuthMethod !== 'private_key_jwt')
    return 'the fapi2-security profile admits only clients authenticating with private_key_jwt'
  return undefined
}
