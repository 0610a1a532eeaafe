/**
 * @module resource_server/dpop
 * DPoP-bound access tokens at the resource server (RFC 9449 §7): the key a token is bound to
 * (`cnf.jkt`, §6.1), and the check of the request's proof (§4.3 with `ath`) against it, with
 * one-time `jti`s (§11.1) and, optionally, server nonces (§9).
 */
import { createDpopNonces, verifyDpopProof } from '../dpop/index.ts'
import { OAuthError } from '../errors.ts'
import { Refusal } from './bearer.ts'
import { pathnameOf } from './metadata.ts'
import type { DpopSettings } from './options.ts'

/** Records a proof until `expiresAt`; false when it was recorded before (a replay). */
type ReplayCheck = (key: string, expiresAt: number, now: number) => Promise<boolean>

/**
 * The key a token is bound to: its `cnf.jkt` (RFC 9449 §6.1), undefined for an unbound token. A
 * `cnf` this helper cannot check (not an object, another confirmation method such as mTLS's
 * `x5t#S256`, an empty `jkt`) refuses the token: accepting it as a bearer token would undo the binding.
 */
export function boundKey(claims: Record<string, unknown>): string | undefined | Refusal {
  const { cnf } = claims
  if (cnf === undefined) return undefined
  const jkt =
    typeof cnf === 'object' && cnf !== null && !Array.isArray(cnf) ? (cnf as { jkt?: unknown }).jkt : undefined
  if (typeof jkt !== 'string' || jkt === '') {
    return new Refusal(401, 'invalid_token', 'the access token is bound to a key in a way this API cannot check')
  }
  return jkt
}

/**
 * Checks the DPoP proof of a request that sent a token bound to `jkt`: undefined when it is good,
 * else the refusal (401 `invalid_dpop_proof` or `use_dpop_nonce`, or `invalid_token` for a proof by
 * another key).
 */
export type DpopCheck = (request: Request, token: string, jkt: string) => Promise<Refusal | undefined>

export function createDpopCheck(settings: DpopSettings, clockTolerance: number, now: () => number): DpopCheck {
  const replay = settings.replay ?? createReplayCache(settings.replayCacheMax)
  const nonces = settings.nonce
    ? createDpopNonces({ secret: settings.nonce.secret, window: settings.nonce.window, now })
    : undefined
  return async (request, token, jkt) => {
    try {
      // RFC 9449 §4.3: typ, alg, signature, htm, htu, iat, ath (§7.1: required here), nonce, jti.
      const proof = await verifyDpopProof({
        header: request.headers.get('dpop'),
        method: request.method,
        url: expectedHtu(request, settings.origin),
        accessToken: token,
        now: now(),
        replay,
        ...(nonces ? { nonces, requireNonce: true } : {}),
        algorithms: settings.algorithms,
        maxAge: settings.maxAge,
        clockTolerance,
      })
      // RFC 9449 §7.1, §6.1: the proof's key must be the one the token is bound to.
      if (proof.jkt !== jkt) return new Refusal(401, 'invalid_token', 'the access token is bound to another DPoP key')
      return undefined
    } catch (err) {
      if (err instanceof OAuthError && (err.code === 'invalid_dpop_proof' || err.code === 'use_dpop_nonce')) {
        return new Refusal(401, err.code, err.message, undefined, err.headers)
      }
      throw err
    }
  }
}

/**
 * The URL a proof's `htu` must name (RFC 9449 §4.3 point 9; query and fragment are ignored): the
 * configured origin plus the request's path, else the request URL, whose origin comes from the
 * Host header (hattip's node adapter, for one, builds it so).
 */
function expectedHtu(request: Request, origin: string | undefined): string {
  if (origin !== undefined) return `${origin}${pathnameOf(request.url)}`
  let url: URL
  try {
    url = new URL(request.url)
  } catch {
    throw new TypeError('dpop.origin: required when request URLs are relative (or give resource)')
  }
  return `${url.origin}${url.pathname}`
}

/**
 * The default replay check: the proofs of the last `maxAge` seconds in memory, at most `max`.
 * Records expire about in the order they are made (`iat` + maxAge), so the expired are dropped from
 * the front, and past the limit the oldest.
 */
function createReplayCache(max: number): ReplayCheck {
  const seen = new Map<string, number>()
  return async (key, expiresAt, now) => {
    const until = seen.get(key)
    if (until !== undefined && until > now) return false
    seen.delete(key)
    seen.set(key, expiresAt)
    for (const [old, at] of seen) {
      if (at > now && seen.size <= max) break
      seen.delete(old)
    }
    return true
  }
}
