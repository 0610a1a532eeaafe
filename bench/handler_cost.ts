/**
 * The handler's own cost per request, without sockets: Gatehouse on Node (memory store, the Node
 * secret digest and signer, as `npm start` runs it) answers pre-built Requests in process, 16 in
 * flight, and the time per request is printed next to what the bare signature costs. A profiling
 * aid for `node --cpu-prof`, not part of the benchmark table.
 *
 *   npx tsx bench/handler_cost.ts [client_credentials|introspection|authorization_code|refresh_token] [requests]
 *
 * authorization_code redeems codes created through the authorization endpoint beforehand (the
 * bench setup's CODES); refresh_token rotates 16 refresh-token chains, one per request in flight.
 */
import { generateKeyPairSync, sign } from 'node:crypto'
import { nodeServiceOptions } from '../adapters/node.ts'
import { PKCE, SERVICE_CLIENT, WEB_CLIENT, basicAuth } from './fixtures.ts'
import { setupGatehouse } from './servers/gatehouse_setup.ts'

const scenario = process.argv[2] ?? 'client_credentials'
const count = Number(process.argv[3] ?? '50000')
let codes: string[] = []
const service = await setupGatehouse({
  serviceOptions: nodeServiceOptions(),
  env: (name) =>
    name === 'PORT'
      ? '3000'
      : name === 'CODES' && scenario === 'authorization_code'
        ? String(count + Math.min(count, 10_000))
        : name === 'CODES_FILE'
          ? '-'
          : undefined,
  writeTextFile: async (_path, text) => {
    codes = text.split('\n')
  },
})

async function tokenBody(): Promise<string> {
  const response = await service.fetch(request(service.endpoints.token, 'grant_type=client_credentials&scope=api1'))
  return ((await response.json()) as { access_token: string }).access_token
}

function request(url: string, body: string, client: { id: string; secret: string } = SERVICE_CLIENT): Request {
  return new Request(url, {
    method: 'POST',
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    body,
  })
}

const codeBody = (code: string): string =>
  new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: WEB_CLIENT.redirectUri,
    code_verifier: PKCE.verifier,
  }).toString()

/** One refresh token per request in flight, each replaced by the response's rotated one. */
const chains: string[] = []
if (scenario === 'refresh_token') {
  const [first] = await (async () => {
    const url = new URL(service.endpoints.authorization)
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: WEB_CLIENT.id,
      redirect_uri: WEB_CLIENT.redirectUri,
      scope: 'openid offline_access api1',
      code_challenge: PKCE.challenge,
      code_challenge_method: 'S256',
    }).toString()
    let cookie = ''
    const out: string[] = []
    for (let i = 0; i < 16; i++) {
      const response = await service.fetch(new Request(url, { headers: cookie ? { cookie } : {} }))
      if (!cookie)
        cookie = response.headers
          .getSetCookie()
          .map((h) => h.split(';')[0])
          .join('; ')
      const code = new URL(response.headers.get('location') ?? '').searchParams.get('code') ?? ''
      const token = await service.fetch(request(service.endpoints.token, codeBody(code), WEB_CLIENT))
      out.push(((await token.json()) as { refresh_token: string }).refresh_token)
    }
    chains.push(...out)
    return out
  })()
  if (!first) throw new Error('no refresh token')
}

const [url, body] =
  scenario === 'introspection'
    ? [service.endpoints.introspection, `token=${await tokenBody()}`]
    : [service.endpoints.token, 'grant_type=client_credentials&scope=api1']

let codeIndex = 0
function nextRequest(worker: number): Request {
  if (scenario === 'authorization_code')
    return request(service.endpoints.token, codeBody(codes[codeIndex++] as string), WEB_CLIENT)
  if (scenario === 'refresh_token')
    return request(
      service.endpoints.token,
      `grant_type=refresh_token&refresh_token=${chains[worker] as string}`,
      WEB_CLIENT,
    )
  return request(url, body)
}

async function run(n: number): Promise<number> {
  const prebuilt = scenario === 'client_credentials' || scenario === 'introspection'
  const requests = prebuilt ? Array.from({ length: n }, () => request(url, body)) : []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: 16 }, async (_, worker) => {
      while (next < n) {
        const req = prebuilt ? (requests[next] as Request) : nextRequest(worker)
        next++
        const response = await service.fetch(req, { address: '127.0.0.1' })
        if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`)
        const text = await response.text()
        if (scenario === 'refresh_token') chains[worker] = (JSON.parse(text) as { refresh_token: string }).refresh_token
      }
    }),
  )
  return ((performance.now() - started) * 1000) / n
}

await run(Math.min(count, 10_000)) // warm-up
const perRequest = await run(count)
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
const input = Buffer.from('x'.repeat(400))
const signStarted = performance.now()
for (let i = 0; i < 10_000; i++) sign('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' })
const signCost = ((performance.now() - signStarted) * 1000) / 10_000
console.log(
  `${scenario}: ${perRequest.toFixed(1)} µs per request in process (${count} requests); one ES256 signature: ${signCost.toFixed(1)} µs`,
)
await service.close()
