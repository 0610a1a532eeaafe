/**
 * Cold-start server (bench scenario `cold_start`): the smallest real start of a token service that
 * can answer one client_credentials request, on Node, Bun or Deno. Plain JavaScript on purpose, so
 * that `node bench/servers/cold_start.mjs` loads no TypeScript tooling at all when it imports the
 * compiled package (FROM=dist); FROM=src imports the TypeScript sources (run it under
 * `node --import tsx`, `bun` or `deno`, which compile them as they load).
 *
 * Environment (all set by bench/cold_start.ts):
 * - SERVER=gatehouse (default) | oidc-provider;
 * - FROM=src | dist, DIST_DIR (the compiled tree, a directory holding src/ and adapters/);
 * - STORE=memory | postgres (DATABASE_URL, schema `gatehouse_bench_cold`);
 * - PRIME=1: drop and migrate that schema, register the client, create the signing keys, exit;
 * - CLIENT_ID, CLIENT_SECRET_HASH (Gatehouse: the stored PBKDF2 hash, as a config file holds it),
 *   CLIENT_SECRET (oidc-provider), JWKS (oidc-provider's private keys, as its config holds them);
 * - PORT, HOST.
 * Prints `READY {json}` once listening, with in-process marks in ms since the process started
 * (`performance.now()`): modules imported, service ready, listening.
 */
const runtime = globalThis.Deno ? 'deno' : globalThis.Bun ? 'bun' : 'node'
const env = (name) => (runtime === 'deno' ? globalThis.Deno.env.get(name) : process.env[name])
const pid = runtime === 'deno' ? globalThis.Deno.pid : process.pid
const marks = {}
const mark = (name) => {
  marks[name] = Math.round(performance.now() * 10) / 10
}

const port = Number(env('PORT') ?? '3000')
const hostname = env('HOST') ?? '127.0.0.1'
const issuer = `http://127.0.0.1:${port}`
const SCHEMA = 'gatehouse_bench_cold'

async function gatehouse() {
  const fromDist = env('FROM') === 'dist'
  const base = fromDist ? `${env('DIST_DIR')}/` : new URL('../../', import.meta.url).href
  const ext = fromDist ? '.js' : '.ts'
  const url = (path) => (fromDist ? new URL(`file://${base}${path}${ext}`).href : new URL(`${path}${ext}`, base).href)
  const adapter = { node: 'adapters/node', bun: 'adapters/bun', deno: 'adapters/deno' }[runtime]
  const [{ createTokenService }, runtimeModule] = await Promise.all([import(url('src/index')), import(url(adapter))])
  let store
  if (env('STORE') === 'postgres') {
    const { createPostgresStore } = await import(url('src/storage/postgres'))
    if (env('PRIME') === '1') {
      const { default: postgres } = await import('postgres')
      const admin = postgres(env('DATABASE_URL'), { max: 1, onnotice: () => {} })
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
      await admin.end()
    }
    store = createPostgresStore({ url: env('DATABASE_URL'), schema: SCHEMA })
    await store.connect()
    if (env('PRIME') === '1') await store.migrate()
  }
  mark('imported')
  const serviceOptions = {
    node: () => runtimeModule.nodeServiceOptions(),
    bun: () => runtimeModule.bunServiceOptions(),
    deno: () => runtimeModule.denoServiceOptions(),
  }[runtime]()
  const service = createTokenService({ issuer, ...(store ? { store } : {}), ...serviceOptions })
  // A stored hash, as a configuration file holds it: registering hashes nothing. Against a store
  // that already has the client (PostgreSQL after PRIME) this is one lookup.
  await service.clients.ensure({
    clientId: env('CLIENT_ID'),
    clientSecret: env('CLIENT_SECRET_HASH'),
    permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
  })
  // Loads the signing keys from the store, or generates them (memory store, or PRIME).
  await service.ready()
  mark('ready')
  if (env('PRIME') === '1') {
    await store?.close?.()
    return undefined
  }
  const serve = { node: 'serveNode', bun: 'serveBun', deno: 'serveDeno' }[runtime]
  await runtimeModule[serve](service.fetch, { port, hostname })
  return `gatehouse (${fromDist ? 'dist' : 'src'})`
}

async function oidcProvider() {
  const { Provider, errors } = await import('oidc-provider')
  const { createServer } = await import('node:http')
  mark('imported')
  const resource = 'urn:bench:api1'
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: env('CLIENT_ID'),
        client_secret: env('CLIENT_SECRET'),
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        scope: 'api1',
      },
    ],
    // Its keys come from its configuration (it has no key store): the equivalent of stored keys.
    jwks: JSON.parse(env('JWKS')),
    scopes: ['openid', 'offline_access', 'api1'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        getResourceServerInfo: async (_ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget()
          return { scope: 'api1', audience: 'api1', accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } }
        },
      },
    },
  })
  mark('ready')
  const server = createServer(provider.callback())
  await new Promise((resolve) => server.listen(port, hostname, resolve))
  return 'oidc-provider'
}

const what = env('SERVER') === 'oidc-provider' ? await oidcProvider() : await gatehouse()
if (what) {
  mark('listening')
  console.log(`READY ${JSON.stringify({ pid, runtime, what, marks })}`)
} else {
  console.log(`PRIMED ${JSON.stringify({ pid, runtime, marks })}`)
  if (runtime === 'deno') globalThis.Deno.exit(0)
  else process.exit(0)
}
