/**
 * @module resource_server/introspection
 * The resource-server helper's revocation check: asks the authorization server's RFC 7662
 * introspection endpoint whether a token (already verified locally as a JWT) is still active, and
 * remembers the answer for a few seconds. A revoked token is refused at most `cacheTtl` seconds
 * after its revocation; an endpoint that cannot answer never lets a token through.
 */
import { base64url } from 'jose'

/** How the helper reaches the introspection endpoint. */
export interface IntrospectionOptions {
  /** The endpoint; default: `introspection_endpoint` from the issuer's discovery document. */
  endpoint?: string
  /** A confidential client holding `ept:introspection`, whose id is one of the token audiences (or the token's client). */
  clientId: string
  /** That client's secret (sent with HTTP Basic, RFC 6749 §2.3.1). */
  clientSecret: string
  /** Seconds an answer is reused, never past the token's `exp`. Default 5; 0 asks every time. */
  cacheTtl?: number
  /** Most answers remembered (the oldest go first). Default 10,000. */
  cacheMax?: number
}

/** The introspection endpoint could not answer (network, timeout, non-200, refused credentials). */
export class IntrospectionFailedError extends Error {
  override name = 'IntrospectionFailedError'
}

interface Settings {
  endpoint: () => Promise<URL>
  clientId: string
  clientSecret: string
  cacheTtl: number
  cacheMax: number
  fetch: (url: string, init: RequestInit) => Promise<Response>
  timeout: number
  now: () => number
}

/** RFC 6749 §2.3.1: client id and secret are form-encoded before Basic's base64. */
function basic(id: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+')
  const bytes = new TextEncoder().encode(`${encode(id)}:${encode(secret)}`)
  return `Basic ${btoa(String.fromCharCode(...bytes))}`
}

/** A check `active(token, exp)`: whether the authorization server still considers the token active. */
export function createIntrospectionCheck(settings: Settings): (token: string, exp: number) => Promise<boolean> {
  // Keyed by the token's SHA-256, never the token: a memory dump shows no usable credential.
  const cache = new Map<string, { active: boolean; until: number }>()
  const authorization = basic(settings.clientId, settings.clientSecret)

  async function ask(token: string): Promise<boolean> {
    const endpoint = await settings.endpoint()
    let response: Response
    try {
      response = await settings.fetch(endpoint.href, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization,
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        redirect: 'manual',
        signal: AbortSignal.timeout(settings.timeout * 1000),
      })
    } catch (cause) {
      throw new IntrospectionFailedError(`the introspection endpoint ${endpoint.href} could not be reached`, { cause })
    }
    if (response.status !== 200) {
      await response.body?.cancel()
      throw new IntrospectionFailedError(`the introspection endpoint answered ${response.status}`)
    }
    let body: unknown
    try {
      body = await response.json()
    } catch (cause) {
      throw new IntrospectionFailedError('the introspection endpoint answered no JSON', { cause })
    }
    const active = (body as { active?: unknown } | null)?.active
    if (typeof active !== 'boolean') throw new IntrospectionFailedError('the introspection answer has no active member')
    return active
  }

  return async (token, exp) => {
    const now = settings.now()
    const key = base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token))))
    const hit = cache.get(key)
    if (hit && hit.until > now) return hit.active
    if (hit) cache.delete(key)
    const active = await ask(token)
    const until = Math.min(now + settings.cacheTtl, exp)
    if (until > now) {
      if (cache.size >= settings.cacheMax) {
        for (const [old, entry] of cache) {
          if (entry.until <= now || cache.size >= settings.cacheMax) cache.delete(old)
          else break
        }
      }
      cache.set(key, { active, until })
    }
    return active
  }
}
