/**
 * Bench server: the ideal ceiling on Node, the least any token service must do per request.
 * Bare node:http, no framework, no store:
 * - POST /token: read and parse the form, check the Basic client secret (HMAC-SHA-256 of the
 *   presented secret compared in constant time with the remembered one, as Gatehouse's verified-
 *   secret cache does), check grant_type and scope, sign ONE RFC 9068 ES256 access token;
 * - POST /introspect: the same form parsing and secret check, verify ONE ES256 JWT and check
 *   iss/exp/client, answer the RFC 7662 fields.
 * SIGNER=jose signs and verifies with jose (Web Crypto underneath, as Gatehouse does);
 * SIGNER=crypto with node:crypto directly (synchronous sign/verify, no JOSE library);
 * SIGNER=crypto-batch like crypto, but the signatures asked for during one turn of the event loop
 * are made back to back right after it (setImmediate), as Gatehouse's `nodeSigner` does: the
 * ceiling of that technique (client_credentials only).
 * Environment: PORT, HOST, SIGNER. Prints `READY {json}`.
 */
import { createHmac, createPrivateKey, createPublicKey, randomBytes, sign, timingSafeEqual, verify } from 'node:crypto'
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import { SignJWT, exportJWK, generateKeyPair, jwtVerify } from 'jose'
import { API_SCOPE, SERVICE_CLIENT } from '../fixtures.ts'

const port = Number(process.env.PORT)
const issuer = `http://127.0.0.1:${port}`
const signer = process.env.SIGNER === 'crypto' || process.env.SIGNER === 'crypto-batch' ? process.env.SIGNER : 'jose'

// The remembered secret: an HMAC under a per-process key, never the secret itself.
const hmacKey = randomBytes(32)
const mac = (secret: string) => createHmac('sha256', hmacKey).update(secret).digest()
const secrets = new Map<string, Buffer>([[SERVICE_CLIENT.id, mac(SERVICE_CLIENT.secret)]])

const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
const privateJwk = await exportJWK(privateKey)
const kid = 'ceiling-es256'
const nodePrivateKey = createPrivateKey({ key: privateJwk as never, format: 'jwk' })
const nodePublicKey = createPublicKey({ key: (await exportJWK(publicKey)) as never, format: 'jwk' })
const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url')
const headerSegment = b64(JSON.stringify({ alg: 'ES256', kid, typ: 'at+jwt' }))

const signNow = (input: Buffer) => sign('sha256', input, { key: nodePrivateKey, dsaEncoding: 'ieee-p1363' })

/** Inputs waiting for the end of this turn of the event loop (SIGNER=crypto-batch). */
let queue: { input: Buffer; resolve: (signature: Buffer) => void }[] = []
function flush(): void {
  const pending = queue
  queue = []
  for (const { input, resolve } of pending) resolve(signNow(input))
}
function signLater(input: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    if (queue.length === 0) setImmediate(flush)
    queue.push({ input, resolve })
  })
}

async function signAccessToken(claims: Record<string, unknown>): Promise<string> {
  if (signer === 'jose') {
    return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' }).sign(privateKey)
  }
  const input = `${headerSegment}.${b64(JSON.stringify(claims))}`
  const bytes = Buffer.from(input)
  return `${input}.${b64(signer === 'crypto-batch' ? await signLater(bytes) : signNow(bytes))}`
}

async function verifyAccessToken(token: string): Promise<Record<string, unknown> | undefined> {
  const now = Math.floor(Date.now() / 1000)
  if (signer === 'jose') {
    try {
      return (await jwtVerify(token, publicKey, { issuer, typ: 'at+jwt', algorithms: ['ES256'] })).payload
    } catch {
      return undefined
    }
  }
  const [header, payload, signature] = token.split('.')
  if (header !== headerSegment || payload === undefined || signature === undefined) return undefined
  const ok = verify(
    'sha256',
    Buffer.from(`${header}.${payload}`),
    { key: nodePublicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature, 'base64url'),
  )
  if (!ok) return undefined
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
  return claims.iss === issuer && typeof claims.exp === 'number' && claims.exp > now ? claims : undefined
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks).toString()))
    request.on('error', reject)
  })
}

/** The authenticated client id, or undefined (client_secret_basic only). */
function authenticate(header: string | undefined): string | undefined {
  if (!header?.startsWith('Basic ')) return undefined
  const decoded = Buffer.from(header.slice(6), 'base64').toString()
  const colon = decoded.indexOf(':')
  const clientId = decodeURIComponent(decoded.slice(0, colon))
  const expected = secrets.get(clientId)
  return expected && timingSafeEqual(expected, mac(decodeURIComponent(decoded.slice(colon + 1)))) ? clientId : undefined
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
  response.end(JSON.stringify(body))
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (request.method !== 'POST') return send(response, 405, { error: 'invalid_request' })
  const params = new URLSearchParams(await readBody(request))
  const clientId = authenticate(request.headers.authorization)
  if (!clientId) return send(response, 401, { error: 'invalid_client' })
  if (request.url === '/token') {
    if (params.get('grant_type') !== 'client_credentials')
      return send(response, 400, { error: 'unsupported_grant_type' })
    if ((params.get('scope') ?? API_SCOPE) !== API_SCOPE) return send(response, 400, { error: 'invalid_scope' })
    const now = Math.floor(Date.now() / 1000)
    const claims = {
      iss: issuer,
      sub: clientId,
      aud: API_SCOPE,
      exp: now + 3600,
      iat: now,
      jti: b64(randomBytes(16)),
      client_id: clientId,
      scope: API_SCOPE,
    }
    return send(response, 200, { access_token: await signAccessToken(claims), token_type: 'Bearer', expires_in: 3600 })
  }
  if (request.url === '/introspect') {
    const claims = await verifyAccessToken(params.get('token') ?? '')
    if (!claims || claims.client_id !== clientId) return send(response, 200, { active: false })
    const { scope, client_id, sub, exp, iat, iss, aud, jti } = claims
    return send(response, 200, { active: true, scope, client_id, sub, exp, iat, iss, aud, jti, token_type: 'Bearer' })
  }
  send(response, 404, { error: 'invalid_request' })
}

const server = createServer((request, response) => {
  handle(request, response).catch(() => send(response, 500, { error: 'server_error' }))
})
await new Promise<void>((resolve) => server.listen(port, process.env.HOST ?? '127.0.0.1', resolve))
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `node ${process.version}`, signer })}`)
