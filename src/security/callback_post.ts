/**
 * @module security/callback_post
 * POSTs to a client's own callback (a back-channel logout endpoint, a CIBA ping endpoint): the URL
 * a client may have for it, and one attempt bounded by a time-out that covers the address check
 * too. No redirect is followed and the response's body is never read. A client the host did not
 * register (`guarded`) is reached only at public addresses (`fetchPublic`).
 */
import { isLoopback } from './networks.ts'
import { fetchPublic, type OutboundOptions, type OutboundResult, type PlainFetch } from './outbound.ts'

/**
 * A client's callback URL, or undefined when it may not be used: https; plain http only toward
 * this machine (a loopback host) for a client the host registered, as for `jwks_uri`; no
 * credentials, no fragment.
 */
export function callbackUrl(uri: string | undefined, selfRegistered: boolean): URL | undefined {
  try {
    const url = new URL(uri ?? '')
    if (url.username !== '' || url.password !== '' || url.hash !== '') return undefined
    if (url.protocol === 'https:') return url
    if (url.protocol === 'http:' && !selfRegistered && isLoopback(url.hostname)) return url
  } catch {}
  return undefined
}

/** Waits `seconds` (a retry's delay). */
export const sleep = (seconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, seconds * 1000))

/** One callback POST. */
export interface CallbackPost {
  url: URL
  headers: Record<string, string>
  body: string
  /** Seconds the attempt may take, the address check included. */
  timeout: number
  /** Only public addresses (a self-registered client's callback). */
  guarded: boolean
  /** How a guarded request goes out; `fetch` (the host's own) is also used for unguarded ones. */
  outbound: OutboundOptions
}

/** What became of the attempt: the answer's status, or why there is none. */
export type CallbackOutcome = { status: number; opaqueRedirect: boolean } | 'timeout' | 'network' | 'refused'

const globalFetch: PlainFetch = (url, init) => fetch(url, init)

/** Sends one callback POST (see the module comment); never rejects. */
export async function postCallback(post: CallbackPost): Promise<CallbackOutcome> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), post.timeout * 1000)
  const timedOut = new Promise<'timeout'>((resolve) =>
    controller.signal.addEventListener('abort', () => resolve('timeout')),
  )
  try {
    const init: RequestInit = {
      method: 'POST',
      redirect: 'manual',
      credentials: 'omit',
      headers: post.headers,
      body: post.body,
      signal: controller.signal,
    }
    const send = post.outbound.fetch ?? globalFetch
    const sent: Promise<OutboundResult> = post.guarded
      ? fetchPublic(post.url, init, post.outbound)
      : send(post.url.href, init).then((response) => ({ response }))
    const outcome = await Promise.race([
      sent.catch(() => (controller.signal.aborted ? ('timeout' as const) : ('network' as const))),
      timedOut,
    ])
    if (typeof outcome === 'string') return outcome
    if ('refused' in outcome) return 'refused'
    const { response } = outcome
    await response.body?.cancel().catch(() => {})
    return { status: response.status, opaqueRedirect: response.type === 'opaqueredirect' }
  } finally {
    clearTimeout(timer)
    controller.abort()
  }
}
