/**
 * The load generator: one process (pinned to its own core by bench/run.ts) driving one server
 * with autocannon for one scenario, then printing `RESULT {json}`.
 *
 * It measures completed requests per second and latency of 2xx responses inside the measured
 * window only: autocannon runs for warm-up + measured seconds without reconnecting, and every
 * response completing before the warm-up ends is ignored. Latencies come from autocannon's
 * per-response timer (sub-millisecond), not its histogram (whole milliseconds).
 *
 * Input: the LOAD_SPEC environment variable (JSON, see `LoadSpec`).
 */
import { readFile } from 'node:fs/promises'
import autocannon from 'autocannon'
import { API_RESOURCE, API_SCOPE, PKCE, SERVICE_CLIENT, WEB_CLIENT, basicAuth, seedTokenValue } from './fixtures.ts'
import { type AutocannonClient, firstSeededBody, randomSeededToken } from './seeded_requests.ts'
import { type ProofAlg, createDpopProofs } from './dpop_proofs.ts'

export type Flavor = 'gatehouse' | 'oidc-provider' | 'ceiling' | 'bridge'
export type Scenario =
  | 'client_credentials'
  /** client_credentials with a fresh DPoP proof per request (RFC 9449), pre-signed (bench/dpop_proofs.ts). */
  | 'client_credentials_dpop'
  | 'introspection'
  | 'authorization_code'
  | 'refresh_token'
  | 'introspection_store'
  | 'trivial'
  /** Driven by bench/signin_load.ts, not by this file. */
  | 'signin_flow'

export interface LoadSpec {
  baseUrl: string
  flavor: Flavor
  scenario: Scenario
  connections: number
  warmupSeconds: number
  seconds: number
  /** Pre-created authorization codes, one a line (code and refresh scenarios). */
  codesFile?: string
  /** How many refresh tokens the server seeded (introspection_store). */
  seedCount?: number
  /** DPoP proofs to pre-sign (client_credentials_dpop): one per request of the whole run. */
  proofs?: number
  /** Their algorithm (default ES256). */
  proofAlg?: ProofAlg
}

export interface LoadResult {
  requests: number
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  non2xx: number
  /** Socket errors and timeouts (autocannon's reqError), by kind. */
  errors: number
  errorKinds?: Record<string, number>
  /** CPU seconds this load process used, setup included (to tell its core's other users apart). */
  cpuSeconds: number
  /** Set when the pre-created codes (or DPoP proofs) ran out (the run is then invalid). */
  exhausted?: boolean
  codesUsed?: number
  /** Seconds spent signing the DPoP proofs before the clock started (client_credentials_dpop). */
  proofSeconds?: number
  /** Sign-in flows (bench/signin_load.ts): HTTP requests one flow takes. */
  stepsPerFlow?: number
}

const spec = JSON.parse(process.env.LOAD_SPEC ?? '') as LoadSpec

const PATHS: Record<Flavor, { token: string; introspect: string }> = {
  gatehouse: { token: '/connect/token', introspect: '/connect/introspect' },
  'oidc-provider': { token: '/token', introspect: '/token/introspection' },
  ceiling: { token: '/token', introspect: '/introspect' },
  bridge: { token: '/token', introspect: '/introspect' },
}
const paths = PATHS[spec.flavor]
const form = (params: Record<string, string>) => new URLSearchParams(params).toString()
const headersFor = (client: { id: string; secret: string }) => ({
  authorization: basicAuth(client),
  'content-type': 'application/x-www-form-urlencoded',
})
const serviceHeaders = headersFor(SERVICE_CLIENT)
const webHeaders = headersFor(WEB_CLIENT)

/** One request outside the measurement (setup and sanity checks). */
async function post(path: string, headers: Record<string, string>, body: string): Promise<Record<string, unknown>> {
  const response = await fetch(spec.baseUrl + path, { method: 'POST', headers, body })
  const json = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/** client_credentials; node-oidc-provider issues a JWT only for a resource indicator. */
function clientCredentialsBody(jwt: boolean): string {
  return form({
    grant_type: 'client_credentials',
    scope: API_SCOPE,
    ...(jwt && spec.flavor === 'oidc-provider' ? { resource: API_RESOURCE } : {}),
  })
}

const redeemBody = (code: string) =>
  form({ grant_type: 'authorization_code', code, redirect_uri: WEB_CLIENT.redirectUri, code_verifier: PKCE.verifier })
const refreshBody = (token: string) => form({ grant_type: 'refresh_token', refresh_token: token })
const REFRESH_TOKEN = /"refresh_token":"([^"]+)"/

async function assertActive(token: string, headers: Record<string, string>): Promise<void> {
  const result = await post(paths.introspect, headers, form({ token }))
  if (result.active !== true)
    throw new Error(`introspection of the bench token is not active: ${JSON.stringify(result)}`)
}

type Request = Omit<autocannon.Request, 'setupRequest' | 'onResponse'> & {
  setupRequest?: (request: autocannon.Request) => autocannon.Request
  onResponse?: (status: number, body: string) => void
}

interface Plan {
  request: Request
  /** Per connection, before its first request (autocannon's `setupClient`). */
  setupClient?: (client: AutocannonClient) => void
  /** Checks the server still answers correctly after the run. */
  after?: () => Promise<void>
  codes?: { used: () => number; exhausted: () => boolean }
  /** Setup work worth reporting (seconds spent pre-signing DPoP proofs). */
  proofSeconds?: number
}

/**
 * The scenario's request and its setup. Setup always makes one authenticated request per client
 * before the clock starts: Gatehouse verifies a secret once with PBKDF2 (600,000 iterations) and
 * then remembers it, so N connections arriving cold would each pay that first verification.
 */
async function plan(): Promise<Plan> {
  switch (spec.scenario) {
    case 'signin_flow':
      throw new Error('signin_flow is driven by bench/signin_load.ts')

    case 'client_credentials':
      await post(paths.token, serviceHeaders, clientCredentialsBody(true))
      return {
        request: { method: 'POST', path: paths.token, headers: serviceHeaders, body: clientCredentialsBody(true) },
      }

    case 'client_credentials_dpop': {
      // One fresh proof per request (unique jti), signed before the clock starts; htu is the token
      // endpoint as the server names it (its issuer is http://127.0.0.1:PORT).
      const count = Math.max(spec.proofs ?? 0, spec.connections + 2)
      const started = performance.now()
      const proofs = createDpopProofs(count, spec.baseUrl + paths.token, 'POST', spec.proofAlg)
      const proofSeconds = (performance.now() - started) / 1000
      const headers = { ...serviceHeaders, dpop: proofs.proof(0) }
      const first = await post(paths.token, headers, clientCredentialsBody(true))
      if (String(first.token_type).toLowerCase() !== 'dpop') {
        throw new Error(`the server did not bind the token to the DPoP key: ${JSON.stringify(first)}`)
      }
      return {
        request: { method: 'POST', path: paths.token, headers, body: clientCredentialsBody(true) },
        setupClient: proofs.setupClient,
        codes: { used: proofs.used, exhausted: () => proofs.used() > proofs.count },
        proofSeconds,
      }
    }

    case 'trivial': {
      // The bridge servers answer the form's grant_type and scope back: check that they do.
      const body = clientCredentialsBody(false)
      const echoed = await post(paths.token, serviceHeaders, body)
      if (echoed.grant_type !== 'client_credentials') throw new Error(`unexpected answer ${JSON.stringify(echoed)}`)
      return { request: { method: 'POST', path: paths.token, headers: serviceHeaders, body } }
    }

    case 'introspection': {
      // node-oidc-provider cannot introspect its JWT access tokens: it gets an opaque one.
      const { access_token: token } = await post(paths.token, serviceHeaders, clientCredentialsBody(false))
      await assertActive(String(token), serviceHeaders)
      return {
        request: {
          method: 'POST',
          path: paths.introspect,
          headers: serviceHeaders,
          body: form({ token: String(token) }),
        },
        after: () => assertActive(String(token), serviceHeaders),
      }
    }

    case 'introspection_store': {
      // A uniformly random one of the seeded refresh tokens per request: no cache stays warm.
      const count = spec.seedCount ?? 0
      await assertActive(seedTokenValue(count - 1), webHeaders)
      return {
        request: { method: 'POST', path: paths.introspect, headers: webHeaders, body: firstSeededBody() },
        setupClient: randomSeededToken(count),
        after: () => assertActive(seedTokenValue(0), webHeaders),
      }
    }

    case 'authorization_code': {
      const codes = (await readFile(spec.codesFile ?? '', 'utf8')).split('\n').filter(Boolean)
      await post(paths.token, webHeaders, redeemBody(codes[0] as string))
      let next = 1
      return {
        request: {
          method: 'POST',
          path: paths.token,
          headers: webHeaders,
          // Each request redeems a fresh code; once they run out the last one is replayed (and
          // fails), which marks the run invalid rather than silently measuring errors.
          setupRequest: (request) => ({
            ...request,
            body: redeemBody(codes[Math.min(next++, codes.length - 1)] as string),
          }),
        },
        codes: { used: () => next, exhausted: () => next > codes.length },
      }
    }

    case 'refresh_token': {
      // Rotation chains: each response's new refresh token goes back into a pool from which the
      // next request takes one. With one request in flight per connection the pool holds one live
      // token per connection. The chains start from codes redeemed here, before the clock starts.
      const codes = (await readFile(spec.codesFile ?? '', 'utf8')).split('\n').filter(Boolean)
      const pool: string[] = []
      for (const code of codes.slice(0, spec.connections)) {
        pool.push(String((await post(paths.token, webHeaders, redeemBody(code))).refresh_token))
      }
      return {
        request: {
          method: 'POST',
          path: paths.token,
          headers: webHeaders,
          // An empty pool (a chain broken by an error) sends a token that fails, counted as non-2xx.
          setupRequest: (request) => ({ ...request, body: refreshBody(pool.shift() ?? 'chain-broken') }),
          onResponse: (_status, body) => {
            const match = REFRESH_TOKEN.exec(body)
            if (match?.[1]) pool.push(match[1])
          },
        },
      }
    }
  }
}

async function measure(): Promise<LoadResult> {
  const { request, setupClient, after, codes, proofSeconds } = await plan()
  // A typed array grown by doubling: a plain array of ~500k numbers grows by copies that the
  // load process then pays for in mark-compact pauses inside the measured window.
  let latencies = new Float64Array(1 << 16)
  let recorded = 0
  let non2xx = 0
  let errors = 0
  const errorKinds: Record<string, number> = {}
  const start = performance.now()
  const measureFrom = start + spec.warmupSeconds * 1000
  const measureTo = measureFrom + spec.seconds * 1000
  // Marks for bench/run.ts, which reads the server's and the database's CPU time at each.
  setTimeout(() => console.log('MEASURING'), spec.warmupSeconds * 1000)
  setTimeout(() => console.log('MEASURED'), (spec.warmupSeconds + spec.seconds) * 1000)
  const inWindow = () => {
    const now = performance.now()
    return now >= measureFrom && now < measureTo
  }
  await new Promise<void>((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.baseUrl,
        connections: spec.connections,
        pipelining: 1,
        duration: spec.warmupSeconds + spec.seconds,
        timeout: 10,
        requests: [request as autocannon.Request],
        ...(setupClient ? { setupClient: setupClient as unknown as autocannon.Options['setupClient'] } : {}),
      },
      (err) => (err ? reject(err) : resolve()),
    )
    instance.on('response', (_client: unknown, status: number, _bytes: number, responseTime: number) => {
      if (!inWindow()) return
      if (status < 200 || status >= 300) {
        non2xx++
        // By status, for the run's log line (a 503 then 400s: a rotation chain broken by a 503).
        errorKinds[`HTTP ${status}`] = (errorKinds[`HTTP ${status}`] ?? 0) + 1
      } else {
        if (recorded === latencies.length) {
          const grown = new Float64Array(recorded * 2)
          grown.set(latencies)
          latencies = grown
        }
        latencies[recorded++] = responseTime
      }
    })
    instance.on('reqError', (err: Error & { code?: string }) => {
      if (!inWindow()) return
      errors++
      const kind = err.code ?? err.message
      errorKinds[kind] = (errorKinds[kind] ?? 0) + 1
    })
  })
  await after?.()
  const sorted = latencies.subarray(0, recorded).sort()
  const percentile = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
  return {
    requests: sorted.length,
    rps: sorted.length / spec.seconds,
    p50: percentile(50),
    p99: percentile(99),
    non2xx,
    errors,
    ...(errors > 0 || non2xx > 0 ? { errorKinds } : {}),
    cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    ...(codes ? { codesUsed: codes.used(), exhausted: codes.exhausted() } : {}),
    ...(proofSeconds !== undefined ? { proofSeconds } : {}),
  }
}

console.log(`RESULT ${JSON.stringify(await measure())}`)
