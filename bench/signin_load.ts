/**
 * The sign-in flow load (scenario `signin_flow`): a closed loop of N virtual users, each a browser
 * with its own cookie jar, each repeating the whole flow for warm-up + measured seconds:
 *
 *   1. GET the authorization endpoint (code, PKCE S256, `openid offline_access api1`) with an
 *      empty cookie jar: a new browser, no session;
 *   2. follow its redirects to the sign-in page (200, HTML) and read its form (action, hidden
 *      fields);
 *   3. POST the form with the virtual user's username and password;
 *   4. follow the redirects until one points at the client's redirect URI and take the code;
 *   5. POST the code to the token endpoint (client_secret_basic, the PKCE verifier): 200 with an
 *      access token, an ID token and a refresh token.
 *
 * A flow counts when its token response completes inside the measured window; its latency is the
 * whole flow's. Flows that fail (unexpected status or page) are counted as failed (non2xx).
 * Launched like bench/load.ts (separate process, pinned to core 1) with the same LOAD_SPEC and the
 * same `RESULT {json}` (requests = completed flows, rps = flows/s).
 */
import { Agent, request } from 'node:http'
import {
  API_RESOURCE,
  CODE_SCOPE,
  PKCE,
  SIGNIN_PASSWORD,
  SIGNIN_USERS,
  WEB_CLIENT,
  basicAuth,
  signinUser,
} from './fixtures.ts'
import type { LoadResult, LoadSpec } from './load.ts'
import { signInForm } from './signin_form.ts'

const spec = JSON.parse(process.env.LOAD_SPEC ?? '') as LoadSpec
const users = Math.min(spec.connections, SIGNIN_USERS)
const oidcProvider = spec.flavor === 'oidc-provider'
const paths = oidcProvider
  ? { authorize: '/auth', token: '/token' }
  : { authorize: '/connect/authorize', token: '/connect/token' }
const agent = new Agent({ keepAlive: true, maxSockets: users * 2 })

interface Reply {
  status: number
  location?: string
  setCookie: string[]
  body: string
}

function send(url: URL, method: 'GET' | 'POST', headers: Record<string, string>, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent,
        headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(res.headers.location ? { location: res.headers.location } : {}),
            setCookie: res.headers['set-cookie'] ?? [],
            body: text,
          }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

async function flow(user: number): Promise<number> {
  const jar = new Map<string, string>()
  const cookies = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const keep = (reply: Reply) => {
    for (const header of reply.setCookie) {
      const [pair] = header.split(';')
      const at = (pair ?? '').indexOf('=')
      if (at > 0) jar.set((pair as string).slice(0, at).trim(), (pair as string).slice(at + 1).trim())
    }
  }
  let steps = 0
  const go = async (url: URL, method: 'GET' | 'POST', body?: string) => {
    steps++
    const headers: Record<string, string> = { accept: 'text/html' }
    if (jar.size) headers.cookie = cookies()
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const reply = await send(url, method, headers, body)
    keep(reply)
    return reply
  }
  const redirect = WEB_CLIENT.redirectUri
  /** Follows redirects until a page (200) or the client's redirect URI. */
  const follow = async (first: Reply, from: URL): Promise<{ reply: Reply; url: URL }> => {
    let reply = first
    let url = from
    for (let hops = 0; reply.status >= 300 && reply.status < 400 && reply.location; hops++) {
      if (hops > 10) throw new Error('too many redirects')
      url = new URL(reply.location, url)
      if (url.href.startsWith(redirect)) return { reply, url }
      reply = await go(url, 'GET')
    }
    return { reply, url }
  }

  const authorize = new URL(paths.authorize, spec.baseUrl)
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: WEB_CLIENT.id,
    redirect_uri: redirect,
    scope: CODE_SCOPE,
    code_challenge: PKCE.challenge,
    code_challenge_method: 'S256',
    ...(oidcProvider ? { resource: API_RESOURCE } : {}),
  }).toString()
  const page = await follow(await go(authorize, 'GET'), authorize)
  if (page.reply.status !== 200) throw new Error(`sign-in page: ${page.reply.status} ${page.reply.body.slice(0, 200)}`)
  const form = signInForm(page.reply.body, signinUser(user), SIGNIN_PASSWORD)
  const action = new URL(form.action, page.url)
  const done = await follow(await go(action, 'POST', new URLSearchParams(form.fields).toString()), action)
  const code = done.url.href.startsWith(redirect) ? done.url.searchParams.get('code') : null
  if (!code)
    throw new Error(`no code after sign-in: ${done.reply.status} ${done.url.href} ${done.reply.body.slice(0, 200)}`)
  steps++
  const body = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirect,
    code_verifier: PKCE.verifier,
  }).toString()
  const token = await send(
    new URL(paths.token, spec.baseUrl),
    'POST',
    { authorization: basicAuth(WEB_CLIENT), 'content-type': 'application/x-www-form-urlencoded' },
    body,
  )
  const json = JSON.parse(token.body) as Record<string, unknown>
  if (token.status !== 200 || !json.access_token || !json.id_token || !json.refresh_token)
    throw new Error(`token: ${token.status} ${token.body.slice(0, 200)}`)
  return steps
}

async function measure(): Promise<LoadResult> {
  // One flow before the clock: checks the configuration and pays the client's first secret
  // verification (Gatehouse caches it), as bench/load.ts does.
  const stepsPerFlow = await flow(0)
  const latencies: number[] = []
  let failed = 0
  const failures = new Map<string, number>()
  const start = performance.now()
  const measureFrom = start + spec.warmupSeconds * 1000
  const measureTo = measureFrom + spec.seconds * 1000
  await Promise.all(
    Array.from({ length: users }, async (_, user) => {
      while (performance.now() < measureTo) {
        const began = performance.now()
        try {
          await flow(user)
          const ended = performance.now()
          if (ended >= measureFrom && ended < measureTo) latencies.push(ended - began)
        } catch (err) {
          const ended = performance.now()
          if (ended >= measureFrom && ended < measureTo) {
            failed++
            const kind = (err as Error).message.slice(0, 80)
            failures.set(kind, (failures.get(kind) ?? 0) + 1)
          }
        }
      }
    }),
  )
  agent.destroy()
  const sorted = latencies.sort((a, b) => a - b)
  const percentile = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
  return {
    requests: sorted.length,
    rps: sorted.length / spec.seconds,
    p50: percentile(50),
    p99: percentile(99),
    non2xx: failed,
    errors: 0,
    ...(failed > 0 ? { errorKinds: Object.fromEntries(failures) } : {}),
    cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    stepsPerFlow,
  }
}

console.log(`RESULT ${JSON.stringify(await measure())}`)
