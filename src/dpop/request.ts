/**
 * @module dpop/request
 * DPoP at the service's own endpoints (RFC 9449): the proof algorithms it accepts, the check of a
 * proof sent to one of its URLs (replay record in the store, server nonces), the token endpoint's
 * rules (§5, §5.2) and the key bindings of codes and refresh tokens (§5, §10).
 */
import { type Config, FAPI2_ALGORITHMS, isFapi2, requiresDpop } from '../config/index.ts'
import type { DpopNonces } from './nonce.ts'
import { OAuthError } from '../errors.ts'
import type { ClientRecord, Store } from '../storage/index.ts'
import { timingSafeEqual } from '../crypto/index.ts'
import { DEFAULT_DPOP_ALGORITHMS, type DpopProof, verifyDpopProof } from './proof.ts'

/** FAPI 2.0 Security Profile §5.4.1 (PS256, ES256, EdDSA), with `Ed25519`, the RFC 9864 name of EdDSA. */
const FAPI2_DPOP_ALGORITHMS: readonly string[] = Object.freeze([...FAPI2_ALGORITHMS, 'Ed25519'])

/**
 * What the DPoP checks read of the service. The service's `Context` is one; it is named by its
 * members here so that dpop/ sits below context.ts (which names `DpopNonces`) in the layers.
 */
export interface DpopContext {
  config: Config
  urls: { token: string }
  store: Pick<Store, 'replays'>
  dpopNonces: DpopNonces
  now(): number
  sha256(value: string): string | Promise<string>
}

/**
 * The algorithms a DPoP proof may be signed with (RFC 9449 §4.3 point 5): under the
 * `fapi2-security` profile only FAPI 2.0's, else {@link DEFAULT_DPOP_ALGORITHMS}. Discovery's
 * `dpop_signing_alg_values_supported` lists the same.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-5.1
 */
export function dpopAlgorithms(config: Pick<Config, 'profile'>): readonly string[] {
  return isFapi2(config) ? FAPI2_DPOP_ALGORITHMS : DEFAULT_DPOP_ALGORITHMS
}

/**
 * Checks the DPoP proof of `request` sent to `url` (one of `ctx.urls`, never `request.url`):
 * RFC 9449 §4.3 with the service's algorithms, server nonces (demanded when
 * `dpop.requireNonce`), and its `jti` spent in the store shared by every instance (§11.1).
 * `accessToken`: a resource request, whose proof must carry `ath` (§7).
 */
export function verifyRequestProof(
  header: string | null,
  request: Request,
  url: string,
  ctx: DpopContext,
  accessToken?: string,
): Promise<DpopProof> {
  return verifyDpopProof({
    header,
    method: request.method,
    url,
    now: ctx.now(),
    replay: (key, expiresAt, now) => ctx.store.replays.use(key, expiresAt, now),
    nonces: ctx.dpopNonces,
    requireNonce: ctx.config.dpop.requireNonce,
    algorithms: dpopAlgorithms(ctx.config),
    sha256: ctx.sha256,
    ...(ctx.config.dpopVerifier ? { verifier: ctx.config.dpopVerifier } : {}),
    ...(accessToken !== undefined ? { accessToken } : {}),
  })
}

/**
 * The token request's DPoP proof, being checked (RFC 9449 §5), or undefined, synchronously, when
 * it has no `DPoP` header (the hot path: no promise, no await): the tokens are then Bearer tokens.
 * Checked before the client authenticates, so a nonce round trip (§8) costs no client
 * authentication and spends no client assertion.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-5
 */
export function tokenRequestProof(request: Request, ctx: DpopContext): Promise<DpopProof> | undefined {
  const header = request.headers.get('dpop')
  return header === null ? undefined : verifyRequestProof(header, request, ctx.urls.token, ctx)
}

/**
 * A client that must use DPoP (`requireDpop`, or the `fapi2-security` profile) is refused
 * without a proof: RFC 9449 §5.2 (`dpop_bound_access_tokens`: the server "MUST reject token
 * requests from the client that do not contain the DPoP header"), answered with §5's
 * `invalid_dpop_proof`, the error of a token request without a valid proof.
 */
export function checkProofRequired(client: ClientRecord, proof: DpopProof | undefined, ctx: DpopContext): void {
  if (proof === undefined && requiresDpop(client, ctx.config)) {
    throw new OAuthError('invalid_dpop_proof', 'the client must send a DPoP proof')
  }
}

/**
 * A code or refresh token bound to a DPoP key is redeemed only with a proof made with that key:
 * RFC 9449 §10 (codes: "If they do not match, it MUST reject the request") and §5 (a public
 * client's refresh token: "The binding MUST be validated"). Neither section names an error code;
 * the grant is not usable by this request, which is RFC 6749 §5.2 `invalid_grant`.
 */
export function checkKeyBinding(jkt: string | undefined, proof: DpopProof | undefined, what: string): void {
  if (jkt === undefined) return
  if (proof === undefined)
    throw new OAuthError('invalid_grant', `the ${what} is bound to a DPoP key: send a DPoP proof`)
  if (!timingSafeEqual(proof.jkt, jkt)) {
    throw new OAuthError('invalid_grant', `the DPoP proof is not signed with the key the ${what} is bound to`)
  }
}

/**
 * RFC 9449 §8.2: with nonces demanded, a successful response to a DPoP request carries the
 * current nonce, so that the client keeps a fresh one without an extra round trip.
 */
export function nextNonce(proof: DpopProof | undefined, ctx: DpopContext): Promise<string> | undefined {
  return proof !== undefined && ctx.config.dpop.requireNonce ? ctx.dpopNonces.current() : undefined
}
