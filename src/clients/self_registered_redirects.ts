/**
 * @module clients/self_registered_redirects
 * What a self-registered client (dynamic registration, RFC 7591; a client ID metadata document)
 * may name as a redirect URI (RFC 8252 §7, RFC 9700 §2.6) and show as text: https, loopback http,
 * or a private-use scheme in reverse domain name form (or one the host lists in the option's
 * `redirectSchemes`), never an operating-system or browser protocol handler; names without
 * control or bidi override characters.
 */
import { OAuthError } from '../errors.ts'
import { isLoopback } from '../security/index.ts'

/**
 * Schemes a redirect URI never uses (they run code, read files, are not navigations, or hand the
 * browser to an operating-system or browser handler). The private-use rule below refuses the
 * dotless ones already; they are named for the dotted look-alikes an operating system registers as
 * its own handlers, and so that a host's `redirectSchemes` option cannot let them in.
 */
const FORBIDDEN_SCHEMES = new Set([
  'http',
  'https',
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
  'jar',
  'mailto',
  'tel',
  'sms',
  'callto',
  'intent',
  'search',
  'search-ms',
  'shell',
  'hcp',
  'its',
  'mk',
  'res',
  'chrome',
  'chrome-extension',
  'moz-extension',
  'resource',
  'x-apple.systempreferences',
])
/** Prefixes of scheme families that are operating-system handlers (`ms-msdt`, `ms-officecmd`, `ms-settings`, …). */
const FORBIDDEN_PREFIXES = ['ms-', 'vnd.ms-']

/**
 * Whether a (lower-case) scheme is one no self-registered client may use, whatever the host's
 * `redirectSchemes` lists: http and https (their own rule applies), and the schemes of
 * {@link FORBIDDEN_SCHEMES} and {@link FORBIDDEN_PREFIXES}.
 */
export function isForbiddenScheme(scheme: string): boolean {
  return FORBIDDEN_SCHEMES.has(scheme) || FORBIDDEN_PREFIXES.some((prefix) => scheme.startsWith(prefix))
}

/** A URI scheme name as a host lists it (RFC 3986 §3.1, lower case: schemes compare case-insensitively). */
export const SCHEME_NAME = /^[a-z][a-z0-9+.-]*$/

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

const NO_SCHEMES: ReadonlySet<string> = new Set()

function badRedirect(description: string): OAuthError {
  return new OAuthError('invalid_redirect_uri', description)
}

/**
 * Checks one redirect URI of a self-registered client (RFC 7591 §2, RFC 8252 §7, RFC 9700 §2.6):
 * an absolute https URI, http only on a loopback host (RFC 8252 §7.3: 127.0.0.0/8, `[::1]`,
 * `localhost`), or a private-use scheme in reverse domain name form (RFC 8252 §7.1:
 * `com.example.app:/cb`) or one of `extraSchemes` (the option's `redirectSchemes`, e.g. Cursor's
 * `cursor`; never a {@link isForbiddenScheme forbidden} one); no fragment, no user information.
 * The same rule serves dynamic registration and client ID metadata documents.
 */
export function checkRedirectUri(value: unknown, extraSchemes: ReadonlySet<string> = NO_SCHEMES): string {
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
  if (scheme === 'https' && url.hostname === '') throw badRedirect('redirect_uris must hold absolute URIs')
  if (scheme === 'https' || scheme === 'http') return value
  if (isForbiddenScheme(scheme)) throw badRedirect('redirect_uris uses a scheme that is not allowed')
  if (!REVERSE_DNS_SCHEME.test(scheme) && !extraSchemes.has(scheme)) {
    throw badRedirect(
      'redirect_uris must use https, http on a loopback host, or a private-use scheme in reverse domain name form',
    )
  }
  return value
}

/** Whether `value` is a redirect URI a self-registered client may use ({@link checkRedirectUri}). */
export function isSelfRegisteredRedirectUri(value: string, extraSchemes: ReadonlySet<string> = NO_SCHEMES): boolean {
  try {
    checkRedirectUri(value, extraSchemes)
    return true
  } catch {
    return false
  }
}

/** Whether a human-readable value (a client name) is free of control and bidi override characters. */
export function isSafeText(value: string): boolean {
  return !UNSAFE_TEXT.test(value)
}
