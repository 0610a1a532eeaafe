/**
 * @module resource_server/bearer
 * RFC 6750 and RFC 9449 §7 on the resource server's side: the access token read from the
 * Authorization header (RFC 6750 §2.1 `Bearer`, RFC 9449 §7.1 `DPoP`; §2.3 query tokens are
 * refused), and refused requests answered as RFC 6750 §3 errors with a `WWW-Authenticate` challenge
 * for each accepted scheme (RFC 9449 §7.2) that names the RFC 9728 metadata when there is some.
 */

/** The RFC 6750 §3.1 error codes. */
export type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope'

/** The RFC 9449 §7.1 and §9 error codes of a `DPoP` challenge. */
export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce'

/** The authentication scheme of a request's access token. */
export type TokenScheme = 'Bearer' | 'DPoP'

/** Why a request is refused: status, error code (none when no token was sent) and description. */
export class Refusal {
  readonly status: 400 | 401 | 403
  readonly error: BearerErrorCode | DpopErrorCode | undefined
  readonly description: string
  /** For insufficient_scope: the scopes the request needs. */
  readonly scope: string | undefined
  /** Extra response headers (`DPoP-Nonce` with use_dpop_nonce). */
  readonly headers: Record<string, string> | undefined

  constructor(
    status: 400 | 401 | 403,
    error: BearerErrorCode | DpopErrorCode | undefined,
    description: string,
    scope?: string,
    headers?: Record<string, string>,
  ) {
    this.status = status
    this.error = error
    this.description = description
    this.scope = scope
    this.headers = headers
  }
}

/** A quoted-string of text that is safe in a header and an error description (RFC 6750 §3). */
function quoted(value: string): string {
  return `"${value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?')}"`
}

/** An access token as sent, and its scheme. */
export interface Credentials {
  scheme: TokenScheme
  token: string
}

/**
 * The access token of a request, or a refusal: RFC 6750 §2.1 `Bearer` or RFC 9449 §7.1 `DPoP`
 * (both token68, the scheme matched case-insensitively); §2.3 query tokens are not accepted.
 */
export function readCredentials(request: Request): Credentials | Refusal {
  const header = request.headers.get('authorization')
  let inQuery = false
  try {
    inQuery = new URL(request.url).searchParams.has('access_token')
  } catch {
    // a relative URL (some frameworks): no query to look at
  }
  if (inQuery) {
    return header !== null
      ? new Refusal(400, 'invalid_request', 'send the access token in one place only')
      : new Refusal(400, 'invalid_request', 'send the access token in the Authorization header, not in the URL')
  }
  if (header === null || header.trim() === '') return new Refusal(401, undefined, 'an access token is required')
  const given = (/^\s*([^\s,]+)/.exec(header)?.[1] ?? '').toLowerCase()
  // Another scheme (Basic…) is an authentication method this API does not support (§3.1).
  if (given !== 'bearer' && given !== 'dpop') return new Refusal(401, undefined, 'an access token is required')
  const scheme: TokenScheme = given === 'dpop' ? 'DPoP' : 'Bearer'
  const match = /^\s*(?:Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)
  if (!match) return new Refusal(400, 'invalid_request', `the Authorization header is not a valid ${scheme} credential`)
  return { scheme, token: match[1] as string }
}

/** What every challenge of one resource server carries besides the error. */
export interface ChallengeSettings {
  realm: string | undefined
  /**
   * RFC 9728 §5.1: the metadata URL, when the `resource` option is given. Its 401s then name the
   * scopes the request needs too (RFC 6750 §3 `scope`), which MCP clients request.
   */
  resourceMetadata: string | undefined
  /** Whether Bearer tokens are accepted (not with `dpop.required`): a `Bearer` challenge comes first. */
  bearer: boolean
  /** RFC 9449 §7.1 `algs`: the accepted DPoP proof algorithms. */
  dpopAlgorithms: readonly string[]
}

/**
 * The `WWW-Authenticate` value: a `Bearer` challenge (when accepted) then a `DPoP` one. Per RFC 9449
 * §7.2 the error goes on the challenge of the scheme the request used, none when it sent no token.
 * Beside a `Bearer` challenge, a `DPoP` one without the error is just `algs` (RFC 9449 §7.2
 * examples); `use_dpop_nonce` comes as the `DPoP` challenge alone (RFC 9449 §9).
 */
function challengeHeader(
  refusal: Refusal,
  challenge: ChallengeSettings,
  required: readonly string[],
  scheme: TokenScheme | undefined,
): string {
  const scope =
    refusal.scope ?? (challenge.resourceMetadata !== undefined && required.length > 0 ? required.join(' ') : undefined)
  const params = (withError: boolean): string[] => {
    const list: string[] = []
    if (challenge.realm !== undefined) list.push(`realm=${quoted(challenge.realm)}`)
    // RFC 9728 §5.1: a client discovers the authorization server from here.
    if (challenge.resourceMetadata !== undefined) list.push(`resource_metadata=${quoted(challenge.resourceMetadata)}`)
    // RFC 6750 §3.1: no error code when the request carried no token.
    if (withError && refusal.error !== undefined) {
      list.push(`error=${quoted(refusal.error)}`, `error_description=${quoted(refusal.description)}`)
    }
    if (scope !== undefined) list.push(`scope=${quoted(scope)}`)
    return list
  }
  const algs = `algs=${quoted(challenge.dpopAlgorithms.join(' '))}`
  const alone = refusal.error === 'use_dpop_nonce' || !challenge.bearer
  if (alone) return `DPoP ${[...params(scheme === 'DPoP' || refusal.error === 'use_dpop_nonce'), algs].join(', ')}`
  const bearer = params(scheme === 'Bearer')
  const dpop = scheme === 'DPoP' ? [...params(true), algs] : [algs]
  return `${bearer.length > 0 ? `Bearer ${bearer.join(', ')}` : 'Bearer'}, DPoP ${dpop.join(', ')}`
}

/** The error response of a refused request: 400 without a challenge, 401 and 403 with one. */
export function refusedResponse(
  refusal: Refusal,
  challenge: ChallengeSettings,
  required: readonly string[],
  scheme: TokenScheme | undefined,
): Response {
  const headers = new Headers({ 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache' })
  if (refusal.status !== 400) headers.set('www-authenticate', challengeHeader(refusal, challenge, required, scheme))
  for (const [name, value] of Object.entries(refusal.headers ?? {})) headers.set(name, value)
  const body = {
    // The same body as Gatehouse's own UserInfo endpoint; only the challenge omits the code (§3.1).
    error: refusal.error ?? 'invalid_token',
    error_description: refusal.description.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?'),
  }
  return new Response(JSON.stringify(body), { status: refusal.status, headers })
}
