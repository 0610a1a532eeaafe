/**
 * @module self_registered_redirects
 * What a self-registered client (dynamic registration, RFC 7591; a client ID metadata document)
 * may name as a redirect URI (RFC 8252 §7, RFC 9700 §2.6) and show as text: https, loopback http,
 * or a private-use scheme in reverse domain name form, never an operating-system or browser
 * protocol handler; names without control or bidi override characters.
 */
import { OAuthError } from './errors.ts'
import { isLoopback } from './networks.ts'

/**
 * Schemes a redirect URI never uses (they run code, read files or are not navigations). The
 * private-use rule below refuses them already (no dot); they are named for the dotted look-alikes
 * an operating system registers as its own handlers.
 */
const FORBIDDEN_SCHEMES = new Set([
  'javascript',
  'data',
  'vbscript',
  'file',
  'blob',
  'about',
  'filesystem',
  'ws',
  'wss',
  'view-source',
  'x-apple.systempreferences',
])
/**
 * A private-use scheme in reverse domain name form (RFC 8252 §7.1: `com.example.app`): labels of
 * letters, digits and hyphens joined by at least one dot. Anything else that is not https or
 * loopback http is an operating-system or browser protocol handler (`ms-msdt:`, `search-ms:`,
 * `ms-officecmd:`, `intent:`, `jar:`, `mailto:`), never a client's own.
 */
const REVERSE_DNS_SCHEME = /^[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+$/
/** Longest URI a self-registered client may give, characters. */
export const MAX_URI = 2000
/** Control characters (C0, C1), bidi embeddings, overrides and isolates, unpaired surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses.
export const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]|\p{Cs}/u

function badRedirect(description: string): OAuthError {
  return new OAuthError('invalid_redirect_uri', description)
}

/**
 * Checks one redirect URI of a self-registered client (RFC 7591 §2, RFC 8252 §7, RFC 9700 §2.6):
 * an absolute https URI, http only on a loopback host (RFC 8252 §7.3: 127.0.0.0/8, `[::1]`,
 * `localhost`), or a private-use scheme in reverse domain name form (RFC 8252 §7.1:
 * `com.example.app:/cb`); no fragment, no user information. The same rule serves dynamic
 * registration and client ID metadata documents.
 */
export function checkRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_URI || UNSAFE_TEXT.test(value)) {
    throw badRedirect(`redirect_uris must hold URIs of at most ${MAX_URI} characters`)
  }
  if (value.includes('#')) throw badRedirect('redirect_uris must not contain a fragment')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badRedirect('redirect_uris must hold absolute URIs')
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase()
  if (url.username !== '' || url.password !== '') throw badRedirect('redirect_uris must not contain user information')
  if (scheme === 'http' && !isLoopback(url.hostname)) {
    throw badRedirect('redirect_uris must use https (http only for loopback hosts)')
  }
  if (FORBIDDEN_SCHEMES.has(scheme)) throw badRedirect('redirect_uris uses a scheme that is not allowed')
  if (scheme === 'https' && url.hostname === '') throw badRedirect('redirect_uris must hold absolute URIs')
  if (scheme !== 'https' && scheme !== 'http' && !REVERSE_DNS_SCHEME.test(scheme)) {
    throw badRedirect(
      'redirect_uris must use https, http on a loopback host, or a private-use scheme in reverse domain name form',
    )
  }
  return value
}

/** Whether `value` is a redirect URI a self-registered client may use ({@link checkRedirectUri}). */
export function isSelfRegisteredRedirectUri(value: string): boolean {
  try {
    checkRedirectUri(value)
    return true
  } catch {
    return false
  }
}

/** Whether a human-readable value (a client name) is free of control and bidi override characters. */
export function isSafeText(value: string): boolean {
  return !UNSAFE_TEXT.test(value)
}
