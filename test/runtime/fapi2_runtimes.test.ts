/**
 * #21 on every runtime: the start script (Node through tsx, Bun, Deno) with a configuration file
 * holding two private_key_jwt clients (RFC 7523) whose public keys the test generated: a web client
 * that must push its authorization requests (RFC 9126) and use DPoP (RFC 9449), and a service
 * client for client_credentials. Over real HTTP, oauth4webapi drives PAR with DPoP → the built-in
 * sign-in → a DPoP-bound code → DPoP-bound tokens → refresh → userinfo → introspection, and
 * openid-client v6 gets a DPoP-bound client_credentials token.
 *
 * With DATABASE_URL, two instances (Node and Deno) on one PostgreSQL schema with one issuer show
 * that a DPoP proof's `jti` and a client assertion's `jti` spent on one are refused by the other
 * (proofs and assertions built by hand with jose, sent twice). And one start (Deno) with
 * `profile: 'fapi2-security'` in the file: discovery advertises the profile, un-pushed requests
 * are refused.
 */
import {
  type CryptoKey,
  type JWK,
  SignJWT,
  calculateJwkThumbprint,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  jwtVerify,
} from 'jose'
import * as oauth from 'oauth4webapi'
import * as client from 'openid-client'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrateStore } from '../../bin/migrate.ts'
import { Browser } from '../helpers/browser.ts'
import {
  CONFIG,
  type Running,
  RUNTIMES,
  bin,
  freePort,
  launch,
  runnable,
  waitUntilServing,
  writeConfig,
} from './server.ts'

const options = { [oauth.allowInsecureRequests]: true }
const WEB_ID = 'fapi-web'
const SERVICE_ID = 'fapi-service'
const FAPI_RU = 'http://127.0.0.1:9/fapi/callback'
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

/** A client's signing key: the private CryptoKey it signs with and the public JWK it registers. */
interface ClientKey {
  alg: string
  kid: string
  privateKey: CryptoKey
  jwk: JWK
}

async function clientKey(alg: 'EdDSA' | 'ES256', kid: string): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg)
  return { alg, kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, use: 'sig' } }
}

/** A DPoP key pair and its RFC 7638 thumbprint (`cnf.jkt`). */
async function dpopKey() {
  const keyPair = await oauth.generateKeyPair('ES256')
  const jwk = await exportJWK(keyPair.publicKey)
  return { keyPair, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') }
}

/**
 * The configuration file: the runtime tests' user (alice), a private_key_jwt web client that must
 * push and use DPoP (`perClient`; without it, only a profile can demand them), and a
 * private_key_jwt service client; `settings` are service options.
 */
function fapiConfig(web: ClientKey, service: ClientKey, settings: Record<string, unknown> = {}, perClient = true) {
  return {
    secretHashIterations: 1000,
    users: CONFIG.users,
    ...settings,
    clients: [
      {
        clientId: WEB_ID,
        displayName: 'FAPI runtime web app',
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwks: { keys: [web.jwk] },
        ...(perClient ? { requireDpop: true, requirePushedAuthorizationRequests: true } : {}),
        idTokenSignedResponseAlg: 'ES256',
        permissions: [
          'ept:authorization',
          'ept:token',
          'ept:introspection',
          'gt:authorization_code',
          'gt:refresh_token',
          'rst:code',
          'scp:openid',
          'scp:profile',
        ],
        redirectUris: [FAPI_RU],
      },
      {
        clientId: SERVICE_ID,
        displayName: 'FAPI runtime service',
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwks: { keys: [service.jwk] },
        permissions: ['ept:token', 'ept:introspection', 'gt:client_credentials', 'scp:api1'],
      },
    ],
  }
}

/** The parameters of a code flow request (PKCE S256, state, nonce) and what the client keeps. */
async function codeRequest() {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  const params = new URLSearchParams({
    client_id: WEB_ID,
    response_type: 'code',
    redirect_uri: FAPI_RU,
    scope: 'openid profile',
    state,
    nonce,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  })
  return { params, verifier, state, nonce }
}

/** A request that was not pushed is sent back to the client with `error`, `state` and RFC 9207 `iss`. */
async function expectRefusedUnpushed(as: oauth.AuthorizationServer, error: string): Promise<void> {
  const { params, state } = await codeRequest()
  const url = new URL(as.authorization_endpoint as string)
  url.search = params.toString()
  const response = await fetch(url, { redirect: 'manual' })
  expect(response.status, await response.clone().text()).toBeGreaterThanOrEqual(300)
  expect(response.status).toBeLessThan(400)
  const location = new URL(response.headers.get('location') as string)
  expect(location.origin + location.pathname).toBe(FAPI_RU)
  expect(location.searchParams.get('error')).toBe(error)
  expect(location.searchParams.get('state')).toBe(state)
  expect(location.searchParams.get('iss')).toBe(as.issuer)
  expect(location.searchParams.has('code')).toBe(false)
}

async function stopAndCheck(server: Running | undefined): Promise<void> {
  if (!server) return
  const exit = await server.stop()
  expect(exit.code === 0 || exit.signal !== null, `exit ${JSON.stringify(exit)}\n${server.output().stderr}`).toBe(true)
}

describe.each(RUNTIMES)('#21 $name: PAR, DPoP and private_key_jwt over HTTP (memory store)', ({ command }) => {
  let config: ReturnType<typeof writeConfig> | undefined
  let server: Running | undefined
  let issuer = ''
  let as: oauth.AuthorizationServer
  let webKey: ClientKey
  let serviceKey: ClientKey

  beforeAll(async () => {
    webKey = await clientKey('EdDSA', 'fapi-web-1')
    serviceKey = await clientKey('ES256', 'fapi-service-1')
    config = writeConfig(fapiConfig(webKey, serviceKey))
    const port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    server = launch([...(await runnable(command)), '--config', config.path], {
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
    })
    await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`)
    const url = new URL(issuer)
    as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options))
  })

  afterAll(async () => {
    try {
      await stopAndCheck(server)
    } finally {
      config?.remove()
    }
  })

  it('#21 RFC 8414 / RFC 9126 §5 / RFC 9449 §5.1: discovery lists PAR, private_key_jwt and DPoP', () => {
    expect(as.pushed_authorization_request_endpoint).toBe(`${issuer}/connect/par`)
    expect(as.token_endpoint_auth_methods_supported).toContain('private_key_jwt')
    expect(as.dpop_signing_alg_values_supported).toContain('ES256')
    // per client here, not for the whole service
    expect(as.require_pushed_authorization_requests ?? false).toBe(false)
  })

  it('#21 RFC 9126 §5: the client requiring PAR has an un-pushed request refused (invalid_request, iss)', async () => {
    await expectRefusedUnpushed(as, 'invalid_request')
  })

  it('#21 oauth4webapi: PAR with DPoP (RFC 9126 §2, RFC 9449 §10.1) → sign-in → code → DPoP-bound tokens (RFC 9449 §5, §6.1) → refresh → userinfo (§7.1) → introspection with cnf (§6.2), private_key_jwt (RFC 7523 §2.2) throughout', async () => {
    const web: oauth.Client = { client_id: WEB_ID, id_token_signed_response_alg: 'ES256' }
    const webAuth = oauth.PrivateKeyJwt({ key: webKey.privateKey, kid: webKey.kid })
    const key = await dpopKey()
    const DPoP = oauth.DPoP(web, key.keyPair)

    // RFC 9126 §2: the push, authenticated with private_key_jwt, with a DPoP proof (binds the code)
    const { params, verifier, state, nonce } = await codeRequest()
    const pushResponse = await oauth.pushedAuthorizationRequest(as, web, webAuth, params, { ...options, DPoP })
    expect(pushResponse.status, await pushResponse.clone().text()).toBe(201)
    const pushed = await oauth.processPushedAuthorizationResponse(as, web, pushResponse)
    expect(pushed.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/)
    expect(pushed.expires_in).toBe(60)

    // RFC 9126 §4: the browser goes to authorize with client_id and request_uri only; alice signs in
    const authorize = new URL(as.authorization_endpoint as string)
    authorize.searchParams.set('client_id', WEB_ID)
    authorize.searchParams.set('request_uri', pushed.request_uri)
    const browser = new Browser((request) => fetch(request), [FAPI_RU])
    const shown = await browser.navigate(authorize.href)
    expect(shown.page?.status, shown.page?.html).toBe(200)
    expect(shown.page?.html).toMatch(/name="password"/)
    const done = await browser.signIn(shown.page as NonNullable<typeof shown.page>, 'alice', 'alice-password')
    expect(done.callback, done.page?.html).toBeDefined()
    const callback = done.callback as URL
    expect(callback.searchParams.get('iss')).toBe(issuer) // RFC 9207
    const codeParams = oauth.validateAuthResponse(as, web, callback, state)

    // RFC 9126 §4: the request_uri was used once
    const again = await fetch(authorize, { redirect: 'manual' })
    expect(again.status).toBe(400)
    expect(await again.text()).toContain('invalid_request_uri')

    // RFC 9449 §5: the code redeemed with a proof of the same key → token_type DPoP, cnf.jkt
    const codeResponse = await oauth.authorizationCodeGrantRequest(as, web, webAuth, codeParams, FAPI_RU, verifier, {
      ...options,
      DPoP,
    })
    expect(codeResponse.status, await codeResponse.clone().text()).toBe(200)
    expect(((await codeResponse.clone().json()) as { token_type: string }).token_type).toBe('DPoP')
    const tokens = await oauth.processAuthorizationCodeResponse(as, web, codeResponse, { expectedNonce: nonce })
    expect(tokens.token_type).toBe('dpop')
    expect(tokens.refresh_token).toBeTypeOf('string')
    const jwks = createRemoteJWKSet(new URL(as.jwks_uri as string))
    const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer, typ: 'at+jwt' })
    expect(payload).toMatchObject({ client_id: WEB_ID, sub: 'user-1', cnf: { jkt: key.jkt } })
    expect(decodeProtectedHeader(tokens.id_token as string).alg).toBe('ES256')
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ iss: issuer, sub: 'user-1', aud: WEB_ID, nonce })

    // refresh with the key → a new DPoP-bound access token, the refresh token rotated
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, { ...options, DPoP }),
    )
    expect(refreshed.token_type).toBe('dpop')
    expect(decodeJwt(refreshed.access_token).cnf).toEqual({ jkt: key.jkt })
    expect(refreshed.refresh_token).toBeTypeOf('string')
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)

    // RFC 9449 §7.1: userinfo with Authorization: DPoP and a proof carrying ath
    const userinfo = await oauth.processUserInfoResponse(
      as,
      web,
      'user-1',
      await oauth.userInfoRequest(as, web, refreshed.access_token, { ...options, DPoP }),
    )
    expect(userinfo).toMatchObject({ sub: 'user-1', given_name: 'Alice' })
    // … and as a Bearer token it is refused with a DPoP challenge
    const asBearer = await fetch(as.userinfo_endpoint as string, {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    })
    expect(asBearer.status).toBe(401)
    expect(asBearer.headers.get('www-authenticate')).toMatch(/^DPoP /)

    // RFC 9449 §6.2: introspection (private_key_jwt) shows the binding
    const introspected = await oauth.processIntrospectionResponse(
      as,
      web,
      await oauth.introspectionRequest(as, web, webAuth, refreshed.access_token, options),
    )
    expect(introspected).toMatchObject({
      active: true,
      client_id: WEB_ID,
      sub: 'user-1',
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
    })

    // requireDpop: a token request of this client without a proof is refused
    const withoutProof = await oauth.refreshTokenGrantRequest(
      as,
      web,
      webAuth,
      refreshed.refresh_token as string,
      options,
    )
    expect(withoutProof.status).toBe(400)
    expect(await withoutProof.json()).toMatchObject({ error: 'invalid_dpop_proof' })
  })

  it('#21 openid-client v6: PrivateKeyJwt + getDPoPHandle → a DPoP-bound client_credentials token (RFC 9449 §5, RFC 7523 §2.2)', async () => {
    const config = await client.discovery(
      new URL(issuer),
      SERVICE_ID,
      undefined,
      client.PrivateKeyJwt({ key: serviceKey.privateKey, kid: serviceKey.kid }),
      { execute: [client.allowInsecureRequests] },
    )
    expect(config.serverMetadata().token_endpoint_auth_methods_supported).toContain('private_key_jwt')
    const key = await dpopKey()
    const DPoP = client.getDPoPHandle(config, key.keyPair)
    const tokens = await client.clientCredentialsGrant(config, { scope: 'api1' }, { DPoP })
    expect(tokens.token_type).toBe('dpop')
    expect(decodeJwt(tokens.access_token)).toMatchObject({ client_id: SERVICE_ID, cnf: { jkt: key.jkt } })
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({
      active: true,
      client_id: SERVICE_ID,
      token_type: 'DPoP',
      cnf: { jkt: key.jkt },
    })
  })
})

/** One hand-signed DPoP proof for POST at `htu` (RFC 9449 §4.2). */
function handProof(key: Awaited<ReturnType<typeof dpopKey>>, htu: string): Promise<string> {
  return new SignJWT({ jti: crypto.randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.keyPair.privateKey)
}

/** One hand-signed client assertion (RFC 7523 §3): `aud` the issuer, a fresh `jti`. */
function handAssertion(key: ClientKey, clientId: string, issuer: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT({ iss: clientId, sub: clientId, aud: issuer, jti: crypto.randomUUID(), iat: now, exp: now + 60 })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .sign(key.privateKey)
}

const DATABASE_URL = process.env.DATABASE_URL
const PG_COMMANDS = {
  node: [bin('tsx'), 'bin/serve_node.ts'],
  deno: [bin('deno'), 'run', '--allow-net', '--allow-env', '--allow-read', '--allow-sys', 'bin/serve_deno.ts'],
} as const
type PgName = keyof typeof PG_COMMANDS

describe.runIf(DATABASE_URL)(
  '#21 two instances (Node, Deno) with one issuer on one PostgreSQL schema: jti replay across instances',
  () => {
    const url = DATABASE_URL as string
    const schema = `gh_fapi2_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`
    const ports = {} as Record<PgName, number>
    const running: Partial<Record<PgName, Running>> = {}
    let config: ReturnType<typeof writeConfig> | undefined
    let issuer = ''
    let tokenEndpoint = ''
    let serviceKey: ClientKey

    const on = (name: PgName, href: string) => href.replace(new URL(issuer).origin, `http://127.0.0.1:${ports[name]}`)

    /** A client_credentials request of the service client to one instance. */
    function token(name: PgName, assertion: string, proof?: string): Promise<Response> {
      return fetch(on(name, tokenEndpoint), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(proof ? { dpop: proof } : {}) },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          scope: 'api1',
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: assertion,
        }),
      })
    }

    beforeAll(async () => {
      serviceKey = await clientKey('ES256', 'fapi-service-pg')
      config = writeConfig(fapiConfig(await clientKey('EdDSA', 'fapi-web-pg'), serviceKey))
      for (const name of Object.keys(PG_COMMANDS) as PgName[]) ports[name] = await freePort()
      issuer = `http://127.0.0.1:${ports.node}/shared-issuer`
      tokenEndpoint = `${issuer}/connect/token`
      // migrate first (as `gatehouse migrate` does), then both instances start on the migrated schema
      await migrateStore({ type: 'postgres', url, schema })
      await Promise.all(
        (Object.keys(PG_COMMANDS) as PgName[]).map(async (name) => {
          const server = launch([...PG_COMMANDS[name], '--config', (config as { path: string }).path], {
            HOST: '127.0.0.1',
            PORT: String(ports[name]),
            ISSUER: issuer,
            GATEHOUSE_STORE: 'postgres',
            DATABASE_URL: url,
            GATEHOUSE_PG_SCHEMA: schema,
          })
          running[name] = server
          await waitUntilServing(server, on(name, `${issuer}/.well-known/openid-configuration`), 40_000)
        }),
      )
      for (const name of Object.keys(PG_COMMANDS) as PgName[]) {
        const metadata = (await (await fetch(on(name, `${issuer}/.well-known/openid-configuration`))).json()) as {
          issuer: string
          token_endpoint: string
        }
        expect(metadata).toMatchObject({ issuer, token_endpoint: tokenEndpoint })
      }
    }, 90_000)

    afterAll(async () => {
      try {
        await Promise.all(Object.values(running).map((server) => stopAndCheck(server)))
      } finally {
        config?.remove()
        const admin = postgres(url, { max: 1, onnotice: () => {} })
        await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await admin.end()
      }
    })

    it('#21 RFC 9449 §11.1: one DPoP proof (same jti, htu = the shared token endpoint) accepted by Node is refused by Deno (invalid_dpop_proof)', async () => {
      const key = await dpopKey()
      const proof = await handProof(key, tokenEndpoint)
      // fresh client assertions each time: only the proof is replayed
      const first = await token('node', await handAssertion(serviceKey, SERVICE_ID, issuer), proof)
      expect(first.status, await first.clone().text()).toBe(200)
      const issued = (await first.json()) as { token_type: string; access_token: string }
      expect(issued.token_type).toBe('DPoP')
      expect(decodeJwt(issued.access_token).cnf).toEqual({ jkt: key.jkt })

      const replayed = await token('deno', await handAssertion(serviceKey, SERVICE_ID, issuer), proof)
      expect(replayed.status).toBe(400)
      const refusal = (await replayed.json()) as { error: string; error_description?: string }
      expect(refusal.error).toBe('invalid_dpop_proof')
      expect(refusal.error_description).toMatch(/jti/)

      // the control: a fresh proof of the same key is accepted by Deno
      const fresh = await token(
        'deno',
        await handAssertion(serviceKey, SERVICE_ID, issuer),
        await handProof(key, tokenEndpoint),
      )
      expect(fresh.status, await fresh.clone().text()).toBe(200)
    })

    it('#21 RFC 7523 §3 (jti used once): one client assertion accepted by Deno is refused by Node (invalid_client)', async () => {
      const assertion = await handAssertion(serviceKey, SERVICE_ID, issuer)
      const first = await token('deno', assertion)
      expect(first.status, await first.clone().text()).toBe(200)
      expect(((await first.json()) as { token_type: string }).token_type).toBe('Bearer')

      const replayed = await token('node', assertion)
      expect(replayed.status).toBe(401)
      expect(await replayed.json()).toMatchObject({
        error: 'invalid_client',
        error_description: 'client_assertion has already been used',
      })

      // the control: a fresh assertion is accepted by Node
      const fresh = await token('node', await handAssertion(serviceKey, SERVICE_ID, issuer))
      expect(fresh.status, await fresh.clone().text()).toBe(200)
    })
  },
)

describe('#21 deno: profile fapi2-security from the configuration file (FAPI 2.0 Security Profile §5)', () => {
  const deno = RUNTIMES.find((row) => row.name === 'deno') as (typeof RUNTIMES)[number]
  let config: ReturnType<typeof writeConfig> | undefined
  let server: Running | undefined
  let issuer = ''
  let as: oauth.AuthorizationServer | undefined
  /** Why the server did not come up; each test fails with it (rather than being skipped). */
  let startError: unknown

  /** The discovered metadata, or the start failure. */
  function started(): oauth.AuthorizationServer {
    if (startError !== undefined || as === undefined) throw startError ?? new Error('not started')
    return as
  }

  beforeAll(async () => {
    config = writeConfig(
      // no per-client requirePushedAuthorizationRequests / requireDpop: the profile alone demands them
      fapiConfig(
        await clientKey('EdDSA', 'fapi-web-p'),
        await clientKey('ES256', 'fapi-service-p'),
        { profile: 'fapi2-security' },
        false,
      ),
    )
    const port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    server = launch([...deno.command, '--config', config.path], {
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
    })
    try {
      await waitUntilServing(server, `${issuer}/.well-known/openid-configuration`)
    } catch (err) {
      startError = err
      return
    }
    const url = new URL(issuer)
    as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options))
  })

  afterAll(async () => {
    try {
      if (startError === undefined) await stopAndCheck(server)
      else await server?.stop()
    } finally {
      config?.remove()
    }
  })

  it('#21 FAPI 2.0 §5.3.2 / RFC 9126 §5 / RFC 7636: discovery advertises the profile (PAR required, private_key_jwt only, S256 only, no RS256)', () => {
    const metadata = started()
    expect(metadata.issuer).toBe(issuer)
    expect(metadata.require_pushed_authorization_requests).toBe(true)
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(['private_key_jwt'])
    expect(metadata.code_challenge_methods_supported).toEqual(['S256'])
    expect(metadata.id_token_signing_alg_values_supported).not.toContain('RS256')
    expect(metadata.id_token_signing_alg_values_supported).toContain('ES256')
  })

  it('#21 FAPI 2.0 §5.3.2.2 / RFC 9126 §5: an authorization request that was not pushed is refused (invalid_request, iss)', async () => {
    await expectRefusedUnpushed(started(), 'invalid_request')
  })
})
