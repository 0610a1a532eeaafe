/**
 * The resource-server helper with DPoP-bound access tokens (RFC 9449 §7): tokens carrying
 * `cnf.jkt`, signed by a running Gatehouse's key, with proofs made here (jose) and by oauth4webapi;
 * the Bearer/DPoP scheme rules, the proof checks, one-time proofs across instances, `dpop.required`,
 * server nonces and the challenges. CONFORMANCE.
 */
import { type CryptoKey, type JWK, SignJWT, base64url, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ResourceServerOptions, type VerifyResult, createResourceServer } from '../../src/resource_server/index.ts'
import { basic } from '../helpers/service.ts'
import { type Gatehouse, startGatehouse } from './gatehouse.ts'

const API = 'https://api.example.test'
const ALGS = 'ES256 EdDSA Ed25519 RS256 PS256 ES384'

/** A DPoP key pair and its RFC 7638 thumbprint. */
interface DpopKey {
  privateKey: CryptoKey
  publicKey: CryptoKey
  jwk: JWK
  jkt: string
}

async function dpopKey(alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const jwk = await exportJWK(publicKey)
  return { privateKey, publicKey, jwk, jkt: await calculateJwkThumbprint(jwk) }
}

async function ath(token: string): Promise<string> {
  return base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token))))
}

interface ProofClaims {
  htm?: string
  htu?: string
  /** null: no ath claim. */
  ath?: string | null
  iat?: number
  jti?: string
  nonce?: string
}

let counter = 0

/** A DPoP proof JWT (RFC 9449 §4.2) for `token`, by default for GET https://api.example.test/things. */
async function proof(key: DpopKey, token: string, now: number, claims: ProofClaims = {}): Promise<string> {
  const payload: Record<string, unknown> = {
    htm: claims.htm ?? 'GET',
    htu: claims.htu ?? `${API}/things`,
    iat: claims.iat ?? now,
    jti: claims.jti ?? `proof-${++counter}-${Math.random()}`,
  }
  if (claims.ath !== null) payload.ath = claims.ath ?? (await ath(token))
  if (claims.nonce !== undefined) payload.nonce = claims.nonce
  return new SignJWT(payload).setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk }).sign(key.privateKey)
}

/** A request with `Authorization: <scheme> <token>` and, when given, a `DPoP` header. */
function request(token: string, dpop?: string, init: { scheme?: string; url?: string; method?: string } = {}): Request {
  const headers = new Headers({ authorization: `${init.scheme ?? 'DPoP'} ${token}` })
  if (dpop !== undefined) headers.set('dpop', dpop)
  return new Request(init.url ?? `${API}/things`, { method: init.method ?? 'GET', headers })
}

function refused(result: VerifyResult, status: number, error: string | undefined) {
  expect(result.ok).toBe(false)
  if (result.ok) throw new Error('accepted')
  expect(result.response.status).toBe(status)
  expect(result.error).toBe(error)
  return { ...result, challenge: result.response.headers.get('www-authenticate') }
}

describe('RFC 9449 §7: DPoP-bound access tokens at the resource-server helper', () => {
  let gh: Gatehouse
  let key: DpopKey
  const make = (options: Partial<ResourceServerOptions> = {}) =>
    createResourceServer({
      issuer: gh.issuer,
      audience: 'api1',
      allowInsecureRequests: true,
      now: gh.clock.now,
      ...options,
    })

  /** A token as Gatehouse issues it for the `service` client, bound to `jkt` (or not, with undefined). */
  const mint = (jkt: string | undefined, extra: Record<string, unknown> = {}) => {
    const now = gh.clock.now()
    return gh.forge({
      iss: gh.issuer,
      sub: 'service',
      aud: 'api1',
      exp: now + 600,
      iat: now,
      jti: `at-${++counter}`,
      client_id: 'service',
      scope: 'api1',
      gty: 'client_credentials',
      ...(jkt !== undefined ? { cnf: { jkt } } : {}),
      ...extra,
    })
  }

  beforeAll(async () => {
    gh = await startGatehouse()
    key = await dpopKey()
  })
  afterAll(async () => {
    await gh?.close()
  })

  it('RFC 9449 §7.1 X-06: a DPoP-bound token with a good proof passes; the result names the key', async () => {
    const rs = make({ requiredScopes: ['api1'] })
    const token = await mint(key.jkt)
    const result = await rs.verify(request(token, await proof(key, token, gh.clock.now())))
    expect(result.ok).toBe(true)
    if (!result.ok) return
    expect(result.dpop).toEqual({ jkt: key.jkt })
    expect(result.claims.cnf).toEqual({ jkt: key.jkt })
    expect(result.subjectType).toBe('client')
    // the scheme is matched case-insensitively (RFC 9110 §11.1); a query is not part of htu (§4.3)
    const lower = request(token, await proof(key, token, gh.clock.now()), {
      scheme: 'dpop',
      url: `${API}/things?page=2`,
    })
    expect((await rs.verify(lower)).ok).toBe(true)
    // protect() hands the handler the key
    const app = rs.protect((_request, auth) => Response.json({ jkt: auth.dpop?.jkt }))
    const response = await app(request(token, await proof(key, token, gh.clock.now())))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ jkt: key.jkt })
    // an unbound token still passes as Bearer, without `dpop`
    const plain = await rs.verify(request(await gh.token(), undefined, { scheme: 'Bearer' }))
    expect(plain.ok && plain.dpop).toBeUndefined()
  })

  it('RFC 9449 §7.2: a DPoP-bound token sent as Bearer → 401 invalid_token, the error on the Bearer challenge', async () => {
    const rs = make()
    const token = await mint(key.jkt)
    for (const withProof of [false, true]) {
      const dpop = withProof ? await proof(key, token, gh.clock.now()) : undefined
      const result = refused(await rs.verify(request(token, dpop, { scheme: 'Bearer' })), 401, 'invalid_token')
      expect(result.description).toBe('the access token is DPoP-bound: send it with the DPoP scheme and a proof')
      expect(result.challenge).toBe(
        `Bearer realm="api1", error="invalid_token", error_description="${result.description}", DPoP algs="${ALGS}"`,
      )
    }
    // a token given as a string has no proof: a bound one is refused the same way
    refused(await rs.verify(token), 401, 'invalid_token')
  })

  it('RFC 9449 §7.1: an unbound token with the DPoP scheme → 401 invalid_token, the error on the DPoP challenge', async () => {
    const rs = make()
    const token = await gh.token()
    const result = refused(
      await rs.verify(request(token, await proof(key, token, gh.clock.now()))),
      401,
      'invalid_token',
    )
    expect(result.description).toBe('the access token is not DPoP-bound: send it as Bearer')
    expect(result.challenge).toBe(
      `Bearer realm="api1", DPoP realm="api1", error="invalid_token", error_description="${result.description}", algs="${ALGS}"`,
    )
    expect(await result.response.json()).toEqual({ error: 'invalid_token', error_description: result.description })
  })

  it('RFC 9449 §7.1, §6.1: a proof signed by another key than cnf.jkt → 401 invalid_token', async () => {
    const rs = make()
    const token = await mint(key.jkt)
    const other = await dpopKey()
    const result = refused(
      await rs.verify(request(token, await proof(other, token, gh.clock.now()))),
      401,
      'invalid_token',
    )
    expect(result.description).toBe('the access token is bound to another DPoP key')
    expect(result.challenge).toContain(`DPoP realm="api1", error="invalid_token"`)
    // a cnf this helper cannot check is refused, never taken as a bearer token
    for (const cnf of [{ 'x5t#S256': 'abc' }, { jkt: '' }, 'jkt', [key.jkt]]) {
      const odd = await mint(undefined, { cnf })
      refused(await rs.verify(request(odd, undefined, { scheme: 'Bearer' })), 401, 'invalid_token')
      refused(await rs.verify(request(odd, await proof(key, odd, gh.clock.now()))), 401, 'invalid_token')
    }
  })

  it('RFC 9449 §4.3 point 12, §7.1: a proof without ath, or with the ath of another token → 401 invalid_dpop_proof', async () => {
    const rs = make()
    const token = await mint(key.jkt)
    const now = gh.clock.now()
    const missing = refused(
      await rs.verify(request(token, await proof(key, token, now, { ath: null }))),
      401,
      'invalid_dpop_proof',
    )
    expect(missing.description).toBe('DPoP proof "ath" is missing')
    // the quotes of the description cannot go in a quoted-string (RFC 6750 §3): `?` instead
    expect(missing.challenge).toBe(
      `Bearer realm="api1", DPoP realm="api1", error="invalid_dpop_proof", error_description="DPoP proof ?ath? is missing", algs="${ALGS}"`,
    )
    const another = await mint(key.jkt)
    const wrong = refused(
      await rs.verify(request(token, await proof(key, token, now, { ath: await ath(another) }))),
      401,
      'invalid_dpop_proof',
    )
    expect(wrong.description).toBe('DPoP proof "ath" does not match the access token')
  })

  it('RFC 9449 §11.1: a replayed proof → 401 invalid_dpop_proof, also at another instance sharing the store', async () => {
    const token = await mint(key.jkt)
    const rs = make()
    const once = await proof(key, token, gh.clock.now())
    expect((await rs.verify(request(token, once))).ok).toBe(true)
    const replayed = refused(await rs.verify(request(token, once)), 401, 'invalid_dpop_proof')
    expect(replayed.description).toBe('DPoP proof "jti" has already been used')
    // the same jti in a new proof is a replay too (the key is jkt + jti)
    const jti = 'reused-jti'
    expect((await rs.verify(request(token, await proof(key, token, gh.clock.now(), { jti })))).ok).toBe(true)
    refused(
      await rs.verify(request(token, await proof(key, token, gh.clock.now(), { jti }))),
      401,
      'invalid_dpop_proof',
    )

    // Two instances of the API sharing a Gatehouse store's replay records: a proof used at one is refused at the other.
    const store = gh.service.store
    const shared = { replay: (k: string, expiresAt: number, now: number) => store.replays.use(k, expiresAt, now) }
    const [a, b] = [make({ dpop: shared }), make({ dpop: shared })]
    const proofAB = await proof(key, token, gh.clock.now())
    expect((await a.verify(request(token, proofAB))).ok).toBe(true)
    refused(await b.verify(request(token, proofAB)), 401, 'invalid_dpop_proof')
    // a replay store that cannot answer lets no proof through: verify rejects with its error
    const down = make({ dpop: { replay: () => Promise.reject(new Error('store down')) } })
    await expect(down.verify(request(token, await proof(key, token, gh.clock.now())))).rejects.toThrow('store down')
    // without sharing, each instance only knows its own proofs
    const [c, d] = [make(), make()]
    const proofCD = await proof(key, token, gh.clock.now())
    expect((await c.verify(request(token, proofCD))).ok).toBe(true)
    expect((await d.verify(request(token, proofCD))).ok).toBe(true)
  })

  it('RFC 9449 §4.3 points 8-9: a proof for another method or URL → 401 invalid_dpop_proof', async () => {
    const rs = make()
    const token = await mint(key.jkt)
    const now = gh.clock.now()
    const cases: Array<[ProofClaims, { method?: string; url?: string }, string]> = [
      [{ htm: 'POST' }, {}, 'DPoP proof "htm" does not match the request method'],
      [{}, { method: 'POST' }, 'DPoP proof "htm" does not match the request method'],
      [{ htm: 'get' }, {}, 'DPoP proof "htm" does not match the request method'],
      [{ htu: `${API}/other` }, {}, 'DPoP proof "htu" does not match the request URL'],
      [{ htu: 'https://evil.example.test/things' }, {}, 'DPoP proof "htu" does not match the request URL'],
      [{ htu: 'http://api.example.test/things' }, {}, 'DPoP proof "htu" does not match the request URL'],
    ]
    for (const [claims, init, description] of cases) {
      const result = refused(
        await rs.verify(request(token, await proof(key, token, now, claims), init)),
        401,
        'invalid_dpop_proof',
      )
      expect(result.description).toBe(description)
    }
    // RFC 3986 §6.2 normalisation: default port and case of scheme and host do not matter
    expect(
      (await rs.verify(request(token, await proof(key, token, now, { htu: 'HTTPS://API.example.test:443/things' }))))
        .ok,
    ).toBe(true)
  })

  it('RFC 9449 §4.3 point 9: htu is checked against dpop.origin, else the origin of resource, not the Host header', async () => {
    const token = await mint(key.jkt)
    const now = gh.clock.now()
    // behind a proxy the request URL has the internal origin; the client signed the public one
    const internal = { url: 'http://10.0.0.7:8080/things' }
    const behindProxy = make({ dpop: { origin: API } })
    expect((await behindProxy.verify(request(token, await proof(key, token, now), internal))).ok).toBe(true)
    refused(
      await behindProxy.verify(request(token, await proof(key, token, now, { htu: internal.url }), internal)),
      401,
      'invalid_dpop_proof',
    )
    // without dpop.origin: the request URL's origin
    refused(await make().verify(request(token, await proof(key, token, now), internal)), 401, 'invalid_dpop_proof')
    // with resource: its origin
    const both = make({ resource: `${API}/things` })
    expect((await both.verify(request(token, await proof(key, token, now), internal))).ok).toBe(true)
    expect(() => make({ dpop: { origin: `${API}/v1` } })).toThrow(/^dpop\.origin:/)
  })

  it('RFC 9449 §7.1, §4.3: a missing, malformed or doubled proof, or an old one → 401 invalid_dpop_proof', async () => {
    const rs = make({ dpop: { maxAge: 60 } })
    const token = await mint(key.jkt)
    const now = gh.clock.now()
    const good = await proof(key, token, now)
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'DPoP proof is missing'],
      ['not-a-jwt', 'DPoP proof is not a compact JWS'],
      [`${good}, ${await proof(key, token, now)}`, 'more than one DPoP header was sent'],
      [await proof(key, token, now, { iat: now - 61 }), 'DPoP proof "iat" is too old'],
      [await proof(key, token, now, { iat: now + 60 }), 'DPoP proof "iat" is in the future'],
    ]
    for (const [dpop, description] of cases) {
      const result = refused(await rs.verify(request(token, dpop)), 401, 'invalid_dpop_proof')
      expect(result.description).toBe(description)
    }
    // a proof signed with an alg this API does not accept, as named in algs
    const strict = make({ dpop: { algorithms: ['EdDSA'] } })
    const result = refused(await strict.verify(request(token, good)), 401, 'invalid_dpop_proof')
    expect(result.challenge).toMatch(/, algs="EdDSA"$/)
    // a malformed DPoP credential → 400 invalid_request, as for Bearer
    refused(await rs.verify(request('a b', good)), 400, 'invalid_request')
  })

  it('dpop.required (RFC 9449 §7.1): Bearer tokens are refused, the DPoP challenge alone', async () => {
    const rs = make({ dpop: { required: true }, resource: `${API}/things` })
    const bound = await mint(key.jkt)
    expect((await rs.verify(request(bound, await proof(key, bound, gh.clock.now())))).ok).toBe(true)
    const metadata = `${API}/.well-known/oauth-protected-resource/things`
    const challenge = `DPoP realm="api1", resource_metadata="${metadata}", algs="${ALGS}"`
    // an unbound Bearer token: a scheme this API does not accept, so no error code (RFC 6750 §3.1)
    const bearer = refused(await rs.verify(request(await gh.token(), undefined, { scheme: 'Bearer' })), 401, undefined)
    expect(bearer.description).toBe('this API accepts DPoP-bound access tokens only (RFC 9449)')
    expect(bearer.challenge).toBe(challenge)
    refused(await rs.verify(request(bound, undefined, { scheme: 'Bearer' })), 401, undefined)
    refused(await rs.verify(await gh.token()), 401, undefined)
    // no token at all
    expect(refused(await rs.verify(new Request(`${API}/things`)), 401, undefined).challenge).toBe(challenge)
    // an unbound token with the DPoP scheme
    const unbound = await gh.token()
    const result = refused(
      await rs.verify(request(unbound, await proof(key, unbound, gh.clock.now()))),
      401,
      'invalid_token',
    )
    expect(result.challenge).toBe(
      `DPoP realm="api1", resource_metadata="${metadata}", error="invalid_token", error_description="${result.description}", algs="${ALGS}"`,
    )
    // RFC 9728 §2: the metadata says so
    expect(rs.metadata()).toMatchObject({
      dpop_signing_alg_values_supported: ALGS.split(' '),
      dpop_bound_access_tokens_required: true,
    })
    expect(make({ resource: `${API}/things` }).metadata()).not.toHaveProperty('dpop_bound_access_tokens_required')
  })

  it('RFC 9449 §9 X-05: with dpop.nonce, a proof without a current nonce → 401 use_dpop_nonce, the DPoP challenge alone', async () => {
    const rs = make({ dpop: { nonce: { secret: new Uint8Array(32).fill(3) } } })
    const token = await mint(key.jkt)
    const first = refused(
      await rs.verify(request(token, await proof(key, token, gh.clock.now()))),
      401,
      'use_dpop_nonce',
    )
    expect(first.challenge).toBe(
      `DPoP realm="api1", error="use_dpop_nonce", error_description="a DPoP nonce is required", algs="${ALGS}"`,
    )
    const nonce = first.response.headers.get('dpop-nonce')
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const retry = await rs.verify(request(token, await proof(key, token, gh.clock.now(), { nonce: nonce as string })))
    expect(retry.ok).toBe(true)
    // another instance with the same secret takes it; a stale nonce is refused with a fresh one
    const twin = make({ dpop: { nonce: { secret: () => new Uint8Array(32).fill(3) } } })
    expect(
      (await twin.verify(request(token, await proof(key, token, gh.clock.now(), { nonce: nonce as string })))).ok,
    ).toBe(true)
    gh.clock.advance(180)
    const stale = refused(
      await rs.verify(request(token, await proof(key, token, gh.clock.now(), { nonce: nonce as string }))),
      401,
      'use_dpop_nonce',
    )
    expect(stale.response.headers.get('dpop-nonce')).not.toBe(nonce)
    expect(() => make({ dpop: { nonce: { secret: new Uint8Array(8) } } })).toThrow(/^dpop\.nonce\.secret:/)
  })

  it('rejects unusable dpop options with a TypeError naming them', () => {
    const bad: Array<[ResourceServerOptions['dpop'], RegExp]> = [
      [{ algorithms: ['HS256'] }, /^dpop\.algorithms:/],
      [{ algorithms: [] }, /^dpop\.algorithms:/],
      [{ maxAge: -1 }, /^dpop\.maxAge:/],
      [{ replayCacheMax: 0 }, /^dpop\.replayCacheMax:/],
      [{ origin: 'api.example.test' }, /^dpop\.origin:/],
      [{ origin: 'http://api.example.test' }, /^dpop\.origin:/],
      [{ required: 'yes' as unknown as boolean }, /^dpop\.required:/],
      [{ replay: 'store' as never }, /^dpop\.replay:/],
    ]
    for (const [dpop, message] of bad) {
      expect(() => createResourceServer({ issuer: 'https://id.example.test', audience: 'api1', dpop })).toThrow(message)
    }
  })

  it('the in-memory replay cache is bounded (dpop.replayCacheMax), newest proofs kept', async () => {
    const rs = make({ dpop: { replayCacheMax: 2 } })
    const token = await mint(key.jkt)
    const proofs = await Promise.all([1, 2, 3].map(() => proof(key, token, gh.clock.now())))
    for (const p of proofs) expect((await rs.verify(request(token, p))).ok).toBe(true)
    for (const p of proofs.slice(1)) refused(await rs.verify(request(token, p)), 401, 'invalid_dpop_proof')
  })

  describe('oauth4webapi as the client (protectedResourceRequest with a DPoP handle)', () => {
    type Init = oauth.CustomFetchOptions<string, oauth.ProtectedResourceRequestBody>
    /** Routes oauth4webapi's resource requests to `app` in process. */
    const to =
      (app: (request: Request) => Promise<Response>) =>
      (url: string, init: Init): Promise<Response> =>
        app(new Request(url, { method: init.method, headers: init.headers, body: init.body as BodyInit }))

    it.each(['ES256', 'EdDSA'] as const)(
      'X-05 X-06: a %s DPoP key, a route guarded by protect() → 200',
      async (alg) => {
        const client = await dpopKey(alg)
        const handle = oauth.DPoP({}, client)
        const token = await mint(await handle.calculateThumbprint())
        const app = make({ requiredScopes: ['api1'] }).protect((_request, auth) => Response.json(auth.dpop))
        const url = new URL(`${API}/things?page=1`)
        const options = { DPoP: handle, [oauth.customFetch]: to(app) }
        for (const method of ['GET', 'POST']) {
          const response = await oauth.protectedResourceRequest(token, method, url, undefined, undefined, options)
          expect(response.status).toBe(200)
          expect(await response.json()).toEqual({ jkt: client.jkt })
        }
      },
    )

    it('X-05: oauth4webapi retries after use_dpop_nonce and reads the challenges of a refusal', async () => {
      const client = await dpopKey()
      const handle = oauth.DPoP({}, client)
      const token = await mint(client.jkt)
      const app = make({ dpop: { nonce: { secret: new Uint8Array(16).fill(9) } } }).protect(() => new Response('ok'))
      const url = new URL(`${API}/things`)
      const options = { DPoP: handle, [oauth.customFetch]: to(app) }
      const call = () => oauth.protectedResourceRequest(token, 'GET', url, undefined, undefined, options)
      const first = await call().catch((err: unknown) => err)
      expect(oauth.isDPoPNonceError(first)).toBe(true)
      expect((await call()).status).toBe(200)
      // a token bound to another key: both challenges parsed, the error on the DPoP one
      const stolen = await mint((await dpopKey()).jkt)
      const error = await oauth
        .protectedResourceRequest(stolen, 'GET', url, undefined, undefined, options)
        .catch((err: unknown) => err)
      expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
      const challenges = (error as oauth.WWWAuthenticateChallengeError).cause
      expect(challenges.map((c) => c.scheme)).toEqual(['bearer', 'dpop'])
      expect(challenges[1]?.parameters).toMatchObject({ error: 'invalid_token', algs: ALGS })
      expect(challenges[0]?.parameters.error).toBeUndefined()
    })

    it('RFC 9449 §5: a token Gatehouse binds at its token endpoint passes (skipped while the token endpoint issues Bearer only)', async (ctx) => {
      const client = await dpopKey()
      const handle = oauth.DPoP({}, client)
      const as = { issuer: gh.issuer, token_endpoint: `${gh.issuer}/connect/token` }
      const response = await oauth.clientCredentialsGrantRequest(
        as,
        { client_id: 'service' },
        (_as, _client, _body, headers) => {
          headers.set('authorization', basic('service', 'service-secret'))
        },
        new URLSearchParams({ scope: 'api1' }),
        { DPoP: handle, [oauth.allowInsecureRequests]: true },
      )
      const body = (await response.json()) as { access_token: string; token_type: string }
      if (body.token_type !== 'DPoP') ctx.skip()
      const app = make().protect((_request, auth) => Response.json(auth.dpop))
      const resource = await oauth.protectedResourceRequest(
        body.access_token,
        'GET',
        new URL(`${API}/things`),
        undefined,
        undefined,
        {
          DPoP: handle,
          [oauth.customFetch]: to(app),
        },
      )
      expect(await resource.json()).toEqual({ jkt: client.jkt })
    })
  })
})
