/**
 * @module ops/demo_client
 * A tiny relying party for trying the sign-in flow in a browser with nothing else running (what
 * Hydra's `perform authorization-code` does): `GET {basePath}` starts an authorization request
 * (PKCE S256, state and nonce kept in an HttpOnly cookie); `GET {basePath}/callback` checks the
 * state, redeems the code at the token endpoint, verifies the ID token and the access token
 * against the JWKS, calls userinfo and shows the decoded claims. `npm start` mounts it with the
 * demo seed. Calls go to the service's fetch handler in process, never over the network.
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1 (authorization code grant)
 * @see https://www.rfc-editor.org/rfc/rfc7636 (PKCE)
 */
import { base64url, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import type { Endpoint } from '../context.ts'
import { escapeHtml as e } from '../http.ts'
import { type Theme, page } from '../pages/index.ts'
import { randomToken, sha256 } from '../crypto/index.ts'

/** What the demo client needs of the service. */
export interface DemoService {
  fetch(request: Request): Promise<Response>
  issuer: string
  endpoints: Record<Endpoint, string>
  keys: { jwks(): Promise<{ keys: Record<string, unknown>[] }> }
}

export interface DemoClientOptions {
  service: DemoService
  clientId: string
  clientSecret: string
  /** The registered redirect URI: the absolute URL of `{basePath}/callback`. */
  redirectUri: string
  /** Where the demo lives on the host, e.g. `/demo`. */
  basePath: string
  scope?: string
  theme?: Theme
}

const COOKIE = 'gatehouse.demo'

function cookieValue(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

interface Pending {
  state: string
  nonce: string
  verifier: string
}

function parsePending(value: string | undefined): Pending | undefined {
  if (!value) return undefined
  try {
    const parsed = JSON.parse(new TextDecoder().decode(base64url.decode(value))) as Partial<Pending>
    const { state, nonce, verifier } = parsed
    if (typeof state === 'string' && typeof nonce === 'string' && typeof verifier === 'string') {
      return { state, nonce, verifier }
    }
  } catch {
    // not ours
  }
  return undefined
}

/** Pretty-printed JSON in a block that scrolls sideways instead of breaking lines inside values. */
function json(value: unknown): string {
  return `<pre class="json"><code>${e(JSON.stringify(value, null, 2))}</code></pre>`
}

/**
 * Creates the demo client's handler: a Response for its two paths, `undefined` for any other.
 */
export function createDemoClient(
  options: DemoClientOptions,
): (request: Request, pathname: string) => Promise<Response> | undefined {
  const { service, clientId, clientSecret, redirectUri, basePath } = options
  const theme = options.theme ?? {}
  const scope = options.scope ?? 'openid profile email api1'
  const start = `${new URL(redirectUri).origin}${basePath}`
  const secure = redirectUri.startsWith('https:') ? '; Secure' : ''
  const cookie = (value: string, maxAge: number) =>
    `${COOKIE}=${value}; Path=${basePath}; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`
  const again = `<p class="center"><a href="${e(start)}">Sign in again</a></p>`

  function failure(message: string, status = 400): Response {
    const headers = new Headers({ 'set-cookie': cookie('', 0) })
    return page(theme, 'Demo sign-in failed', `<p class="error" role="alert">${e(message)}</p>${again}`, {
      status,
      headers,
    })
  }

  /** 1. Start: a fresh state, nonce and PKCE verifier in a cookie; redirect to the authorization endpoint. */
  async function begin(request: Request): Promise<Response> {
    // The callback comes back to the redirect URI's origin: start there so the cookie rides along
    // (once: behind a proxy that rewrites Host the origins never match).
    const url = new URL(request.url)
    if (url.origin !== new URL(start).origin && !url.searchParams.has('moved')) {
      return new Response(null, { status: 303, headers: { location: `${start}?moved` } })
    }
    const pending: Pending = { state: randomToken(), nonce: randomToken(), verifier: randomToken() }
    const authorize = new URL(service.endpoints.authorization)
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope,
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await sha256(pending.verifier), // RFC 7636 S256: base64url(SHA-256(verifier))
      code_challenge_method: 'S256',
    }).toString()
    const value = base64url.encode(JSON.stringify(pending))
    return new Response(null, {
      status: 303,
      headers: { location: authorize.href, 'set-cookie': cookie(value, 600), 'cache-control': 'no-store' },
    })
  }

  /** 2. Callback: check state and iss, redeem the code, verify the tokens, call userinfo, show them. */
  async function callback(request: Request): Promise<Response> {
    const params = new URL(request.url).searchParams
    const pending = parsePending(cookieValue(request, COOKIE))
    if (!pending) return failure('No sign-in in progress in this browser (the demo cookie is missing or expired).')
    // RFC 6749 §10.12: the state binds the response to this browser's request.
    if (params.get('state') !== pending.state) return failure('The state does not match this browser’s request.')
    // RFC 9207: the response names its issuer.
    const iss = params.get('iss')
    if (iss !== null && iss !== service.issuer) return failure('The response names another issuer.')
    const error = params.get('error')
    if (error !== null) {
      const description = params.get('error_description')
      return failure(`The authorization server answered ${error}${description ? `: ${description}` : ''}.`)
    }
    const code = params.get('code')
    if (code === null) return failure('The response has no code.')

    const tokenResponse = await service.fetch(
      new Request(service.endpoints.token, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`)}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: redirectUri,
          code_verifier: pending.verifier,
        }),
      }),
    )
    const tokens = (await tokenResponse.json()) as Record<string, unknown>
    if (tokenResponse.status !== 200) {
      return failure(`The token endpoint answered ${tokenResponse.status}: ${String(tokens.error ?? '')}`)
    }
    const idToken = tokens.id_token
    const accessToken = tokens.access_token
    if (typeof idToken !== 'string' || typeof accessToken !== 'string') {
      return failure('The token response lacks an ID token or an access token.')
    }
    const jwks = createLocalJWKSet((await service.keys.jwks()) as Parameters<typeof createLocalJWKSet>[0])
    let idClaims: Record<string, unknown>
    let accessClaims: Record<string, unknown>
    try {
      // OpenID Connect Core §3.1.3.7: signature, iss, aud, exp; §3.1.3.7 (11): nonce.
      idClaims = (await jwtVerify(idToken, jwks, { issuer: service.issuer, audience: clientId })).payload
      if (idClaims.nonce !== pending.nonce) return failure('The ID token’s nonce does not match.')
      // RFC 9068 §4: typ at+jwt, signature and iss.
      accessClaims = (await jwtVerify(accessToken, jwks, { issuer: service.issuer, typ: 'at+jwt' })).payload
    } catch (err) {
      return failure(`A token did not verify: ${err instanceof Error ? err.message : String(err)}`)
    }
    const userinfoResponse = await service.fetch(
      new Request(service.endpoints.userinfo, { headers: { authorization: `Bearer ${accessToken}` } }),
    )
    const userinfo =
      userinfoResponse.status === 200 ? await userinfoResponse.json() : { status: userinfoResponse.status }

    const other = Object.fromEntries(
      Object.entries(tokens).filter(([name]) => !['id_token', 'access_token', 'refresh_token'].includes(name)),
    )
    const body = `<p class="lead">The demo client <code>${e(clientId)}</code> signed you in with the authorization code flow
(PKCE S256, state, nonce), redeemed the code at <code>${e(service.endpoints.token)}</code> and verified both tokens
against the JWKS.</p>
<h2>ID token</h2>
<p>Header</p>${json(decodeProtectedHeader(idToken))}<p>Claims</p>${json(idClaims)}
<h2>Access token</h2>
<p>Header</p>${json(decodeProtectedHeader(accessToken))}<p>Claims</p>${json(accessClaims)}
<h2>Userinfo</h2>${json(userinfo)}
<h2>Token response</h2>${json(other)}
<p>Refresh token: ${typeof tokens.refresh_token === 'string' ? 'issued (opaque; not shown)' : 'none'}</p>
${again}`
    // Wide: the decoded tokens are read, not squeezed into the sign-in form's width.
    return page(theme, 'Signed in', body, { headers: new Headers({ 'set-cookie': cookie('', 0) }), wide: true })
  }

  return (request, pathname) => {
    if (pathname !== basePath && pathname !== `${basePath}/callback`) return undefined
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return Promise.resolve(new Response('method not allowed', { status: 405, headers: { allow: 'GET, HEAD' } }))
    }
    return pathname === basePath ? begin(request) : callback(request)
  }
}
