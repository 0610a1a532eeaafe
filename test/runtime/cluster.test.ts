/**
 * Many instances, one issuer: three processes (Node, Bun, Deno) on one shared store, each on its own
 * port with the same ISSUER. A flow hops between them: sign in on one, redeem on the second, refresh
 * on the third, introspect and revoke across them; parallel double redemption across instances
 * yields one success. Run for PostgreSQL (DATABASE_URL), Redis (REDIS_URL), a Redis Cluster of
 * three masters with a replica each (#43: started here where redis-server is installed, through
 * REDIS_CLUSTER_NODES) and Redis behind Sentinel (#43 item 2: a primary, a replica and three
 * sentinels, started likewise, through REDIS_SENTINELS and REDIS_SENTINEL_NAME).
 */
import { join } from 'node:path'
import * as oauth from 'oauth4webapi'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisStore } from '../../src/storage/redis.ts'
import { Browser } from '../helpers/browser.ts'
import { hasRedisServer, startRedisCluster } from '../helpers/redis_cluster.ts'
import { startRedisSentinel } from '../helpers/redis_sentinel.ts'
import { CONFIG, PLRU, ROOT, RU, type Running, freePort, launch, waitUntilServing, writeConfig } from './server.ts'

const bin = (name: string) => join(ROOT, 'node_modules/.bin', name)
const COMMANDS = {
  node: [bin('tsx'), 'bin/serve_node.ts'],
  bun: [bin('bun'), 'run', 'bin/serve_bun.ts'],
  deno: [bin('deno'), 'run', '--allow-net', '--allow-env', '--allow-read', '--allow-sys', 'bin/serve_deno.ts'],
} as const
type Name = keyof typeof COMMANDS

const web: oauth.Client = { client_id: 'rt-web' }
const webAuth = oauth.ClientSecretBasic('rt-web-secret')
const rs: oauth.Client = { client_id: 'api1' }
const rsAuth = oauth.ClientSecretBasic('api1-secret')
const tag = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`

/** #43: the local Redis Cluster (test/helpers/redis_cluster.ts), stopped by its cleanup below. */
const redisCluster = hasRedisServer ? await startRedisCluster() : undefined
/** #43 item 2: a primary, a replica and three sentinels (test/helpers/redis_sentinel.ts), likewise. */
const redisSentinel = hasRedisServer ? await startRedisSentinel() : undefined

const stores = [
  {
    name: 'PostgreSQL',
    url: process.env.DATABASE_URL,
    env: (url: string) => ({
      GATEHOUSE_STORE: 'postgres',
      DATABASE_URL: url,
      GATEHOUSE_PG_SCHEMA: `gh_cluster_${tag}`,
    }),
    async cleanup(url: string) {
      const sql = postgres(url, { max: 1, onnotice: () => {} })
      await sql.unsafe(`DROP SCHEMA IF EXISTS "gh_cluster_${tag}" CASCADE`)
      await sql.end()
    },
  },
  {
    name: 'Redis',
    url: process.env.REDIS_URL,
    env: (url: string) => ({ GATEHOUSE_STORE: 'redis', REDIS_URL: url, GATEHOUSE_REDIS_PREFIX: `gh-cluster-${tag}:` }),
    async cleanup(url: string) {
      const store = createRedisStore({ url, prefix: `gh-cluster-${tag}:` })
      await store.connect()
      await store.clear()
      await store.close()
    },
  },
  {
    name: 'Redis Cluster',
    url: redisCluster?.nodes.join(','),
    env: (nodes: string) => ({
      GATEHOUSE_STORE: 'redis',
      REDIS_CLUSTER_NODES: nodes,
      GATEHOUSE_REDIS_PREFIX: `gh-cluster-${tag}:`,
    }),
    async cleanup(nodes: string) {
      try {
        const store = createRedisStore({ cluster: nodes.split(','), prefix: `gh-cluster-${tag}:` })
        await store.connect()
        await store.clear()
        await store.close()
      } finally {
        await redisCluster?.stop()
      }
    },
  },
  {
    name: 'Redis Sentinel',
    url: redisSentinel?.sentinels.join(','),
    env: (sentinels: string) => ({
      GATEHOUSE_STORE: 'redis',
      REDIS_SENTINELS: sentinels,
      REDIS_SENTINEL_NAME: redisSentinel?.name as string,
      GATEHOUSE_REDIS_PREFIX: `gh-cluster-${tag}:`,
    }),
    async cleanup(sentinels: string) {
      try {
        const sentinel = { nodes: sentinels.split(','), name: redisSentinel?.name as string }
        const store = createRedisStore({ sentinel, prefix: `gh-cluster-${tag}:` })
        await store.connect()
        await store.clear()
        await store.close()
      } finally {
        await redisSentinel?.stop()
      }
    },
  },
]

describe.each(stores)('three runtimes on one $name store', ({ url, env, cleanup }) => {
  const ports = {} as Record<Name, number>
  const running = {} as Record<Name, Running>
  let config: ReturnType<typeof writeConfig>
  let issuer = ''
  let as: oauth.AuthorizationServer

  /** oauth4webapi options sending every request to one instance. */
  const via = (name: Name) => ({
    [oauth.allowInsecureRequests]: true,
    [oauth.customFetch]: (input: string, init?: RequestInit) => fetch(retarget(input, name), init),
  })
  const retarget = (input: string, name: Name) =>
    input.replace(new URL(issuer).origin, `http://127.0.0.1:${ports[name]}`)

  async function start(name: Name): Promise<void> {
    running[name] = launch([...COMMANDS[name], '--config', config.path], {
      HOST: '127.0.0.1',
      PORT: String(ports[name]),
      ISSUER: issuer,
      ...env(url as string),
    })
    await waitUntilServing(running[name], retarget(`${issuer}/.well-known/openid-configuration`, name), 40_000)
  }

  beforeAll(async () => {
    if (!url) return
    config = writeConfig(CONFIG)
    for (const name of Object.keys(COMMANDS) as Name[]) ports[name] = await freePort()
    issuer = `http://127.0.0.1:${ports.node}/shared-issuer`
    await Promise.all((Object.keys(COMMANDS) as Name[]).map(start))
    as = await oauth.processDiscoveryResponse(
      new URL(issuer),
      await oauth.discoveryRequest(new URL(issuer), via('bun')),
    )
  }, 120_000)

  afterAll(async () => {
    if (!url) return
    await Promise.all(Object.values(running).map((r) => r.stop().catch(() => undefined)))
    config?.remove()
    await cleanup(url)
  })

  it.runIf(url)(
    'every instance publishes the same JWKS within a few seconds',
    async () => {
      let sets: string[] = []
      // Instances that generated keys reload every 2 s until they agree; a loaded CI machine took longer than 10 s once.
      for (let attempt = 0; attempt < 60; attempt++) {
        sets = await Promise.all(
          (Object.keys(COMMANDS) as Name[]).map(async (name) =>
            JSON.stringify(await (await fetch(retarget(as.jwks_uri as string, name))).json()),
          ),
        )
        if (new Set(sets).size === 1) break
        await new Promise((r) => setTimeout(r, 500))
      }
      expect(new Set(sets).size).toBe(1)
    },
    60_000,
  )

  async function code(signInOn: Name) {
    const browser = new Browser(async (request) => fetch(retarget(request.url, signInOn), request), [RU])
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const authorize = new URL(as.authorization_endpoint as string)
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'rt-web',
      redirect_uri: RU,
      scope: 'openid profile api1',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString()
    const first = await browser.navigate(authorize.href)
    if (!first.page) throw new Error('no sign-in page')
    const done = await browser.signIn(first.page, 'alice', 'alice-password')
    if (!done.callback) throw new Error(`no callback: ${done.page?.html}`)
    return { params: oauth.validateAuthResponse(as, web, done.callback, state), verifier }
  }

  /** Signs in on one instance and redeems the code on another. */
  async function signedIn(signInOn: Name, redeemOn: Name) {
    const { params, verifier } = await code(signInOn)
    const response = await oauth.authorizationCodeGrantRequest(as, web, webAuth, params, RU, verifier, via(redeemOn))
    return oauth.processAuthorizationCodeResponse(as, web, response, { expectedNonce: oauth.expectNoNonce })
  }

  it.runIf(url)('sign in on Node, redeem on Bun, refresh on Deno, introspect and revoke across them', async () => {
    const tokens = await signedIn('node', 'bun')
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, via('deno')),
    )
    const introspect = async (token: string, on: Name) =>
      oauth.processIntrospectionResponse(as, rs, await oauth.introspectionRequest(as, rs, rsAuth, token, via(on)))
    expect(await introspect(refreshed.access_token, 'node')).toMatchObject({
      active: true,
      sub: 'user-1',
      client_id: 'rt-web',
    })
    // reuse of the rotated token on another instance revokes the family everywhere
    const reuse = await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, via('node'))
    await expect(oauth.processRefreshTokenResponse(as, web, reuse)).rejects.toMatchObject({ error: 'invalid_grant' })
    for (const on of ['node', 'bun', 'deno'] as const)
      expect(await introspect(refreshed.access_token, on)).toEqual({ active: false })
  })

  it.runIf(url)('a revocation on one instance is seen by the others at once', async () => {
    const tokens = await signedIn('deno', 'node')
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, web, webAuth, tokens.access_token, via('bun')),
    )
    const info = await oauth.userInfoRequest(as, web, tokens.access_token, via('deno'))
    expect(info.status).toBe(401)
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, web, webAuth, tokens.refresh_token as string, via('deno')),
    )
    const refresh = await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, via('node'))
    await expect(oauth.processRefreshTokenResponse(as, web, refresh)).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  it.runIf(url)('parallel redemption of one code across the three instances: exactly one success', async () => {
    const { params, verifier } = await code('bun')
    const names = ['node', 'bun', 'deno', 'node', 'bun', 'deno'] as const
    const responses = await Promise.all(
      names.map((on) => oauth.authorizationCodeGrantRequest(as, web, webAuth, params, RU, verifier, via(on))),
    )
    expect(responses.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400, 400])
    // the replays revoked what the one success issued (RFC 6749 §4.1.2)
    const winner = (await (responses.find((r) => r.status === 200) as Response).json()) as { access_token: string }
    const introspection = await oauth.introspectionRequest(as, rs, rsAuth, winner.access_token, via('deno'))
    expect(await oauth.processIntrospectionResponse(as, rs, introspection)).toEqual({ active: false })
  })

  it.runIf(url)('parallel refresh of one token across instances: one success, then the family is revoked', async () => {
    const tokens = await signedIn('node', 'deno')
    const names = ['node', 'bun', 'deno', 'node', 'bun', 'deno'] as const
    const responses = await Promise.all(
      names.map((on) => oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, via(on))),
    )
    const ok = responses.filter((r) => r.status === 200)
    expect(ok).toHaveLength(1)
    const winner = (await (ok[0] as Response).json()) as { refresh_token: string }
    const next = await oauth.refreshTokenGrantRequest(as, web, webAuth, winner.refresh_token, via('bun'))
    await expect(oauth.processRefreshTokenResponse(as, web, next)).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  it.runIf(url)('a restarted instance carries on: same keys, same clients, live refresh tokens', async () => {
    const tokens = await signedIn('node', 'node')
    const jwksBefore = await (await fetch(retarget(as.jwks_uri as string, 'node'))).json()
    await running.node.stop()
    await start('node')
    expect(await (await fetch(retarget(as.jwks_uri as string, 'node'))).json()).toEqual(jwksBefore)
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      web,
      await oauth.refreshTokenGrantRequest(as, web, webAuth, tokens.refresh_token as string, via('node')),
    )
    expect(refreshed.access_token).toBeTypeOf('string')
    // logout on the restarted instance with an ID token issued before the restart
    const logout = new URL(as.end_session_endpoint as string)
    logout.search = new URLSearchParams({
      id_token_hint: tokens.id_token as string,
      post_logout_redirect_uri: PLRU,
    }).toString()
    const response = await fetch(retarget(logout.href, 'node'), { redirect: 'manual' })
    expect(response.status).toBe(303)
  })
})
