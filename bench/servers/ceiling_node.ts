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
 * ceiling of that technique.
 * #31: `grant_type=authorization_code` and `refresh_token` go to the runtime-neutral token endpoint
 * of ceiling_core.ts (code redemption with PKCE, refresh rotation with the family check; the Bun
 * and Deno ceilings answer all three grants with it), signing as SIGNER says (jose: WebCrypto;
 * crypto: node:crypto inline; crypto-batch: batched per turn). CODES, CODES_FILE: codes to
 * pre-create, as the Gatehouse servers do.
 * With a `DPoP` header (RFC 9449, the client_credentials_dpop scenarios, node:crypto signers only),
 * POST /token also does the least a DPoP check must: split the proof, read its header once per
 * key (typ, alg, the key imported and its RFC 7638 thumbprint), verify ONE signature (batched per
 * turn with crypto-batch), check htm, htu, iat and that the jti is new (an in-process Map), and
 * bind the token (`cnf.jkt`, token_type DPoP). No nonce, no shared store.
 * Environment: PORT, HOST, SIGNER. Prints `READY {json}`.
 */
import {
  type JsonWebKey,
  type KeyObject,
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  randomBytes,
  sign,
  timingSafeEqual,
  verify,
} from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import { SignJWT, exportJWK, generateKeyPair, jwtVerify } from 'jose'
import { API_SCOPE, SERVICE_CLIENT } from '../fixtures.ts'
import { CEILING_HEADERS, createCeiling } from './ceiling_core.ts'
import { ceilingSigner } from './ceiling_signers.ts'

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

const userGrants = createCeiling(
  issuer,
  await ceilingSigner({ jose: 'webcrypto', crypto: 'node', 'crypto-batch': 'node-batch' }[signer]),
)
if (Number(process.env.CODES ?? '0') > 0 && process.env.CODES_FILE) {
  await writeFile(process.env.CODES_FILE, userGrants.createCodes(Number(process.env.CODES)))
}

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

/** Per proof header: its key, imported, and the key's thumbprint (a client reuses one key). */
const proofKeys = new Map<string, { alg: string; key: KeyObject; jkt: string; params: object }>()
/** Spent jtis (per key) until their iat leaves the 300 s window. */
const spentJtis = new Map<string, number>()
const PROOF_PARAMS: Record<string, { hash: string | null; options: object }> = {
  ES256: { hash: 'sha256', options: { dsaEncoding: 'ieee-p1363' } },
  PS256: { hash: 'sha256', options: { padding: 6, saltLength: 32 } },
  EdDSA: { hash: null, options: {} },
}

/** Inputs waiting for the end of this turn (SIGNER=crypto-batch), as with signatures. */
let verifyQueue: { run: () => boolean; resolve: (ok: boolean) => void }[] = []
function verifyLater(run: () => boolean): Promise<boolean> {
  return new Promise((resolve) => {
    if (verifyQueue.length === 0)
      setImmediate(() => {
        const pending = verifyQueue
        verifyQueue = []
        for (const item of pending) item.resolve(item.run())
      })
    verifyQueue.push({ run, resolve })
  })
}

/** The proof's key thumbprint, or undefined when the proof does not hold. */
async function checkProof(proof: string, htu: string): Promise<string | undefined> {
  const [header, payload, signature] = proof.split('.')
  if (header === undefined || payload === undefined || signature === undefined) return undefined
  let known = proofKeys.get(header)
  if (!known) {
    const { typ, alg, jwk } = JSON.parse(Buffer.from(header, 'base64url').toString()) as {
      typ?: string
      alg: string
      jwk: JsonWebKey & { kty: string }
    }
    const params = PROOF_PARAMS[alg]
    if (typ !== 'dpop+jwt' || !params || 'd' in jwk) return undefined
    const members =
      jwk.kty === 'EC' ? ['crv', 'kty', 'x', 'y'] : jwk.kty === 'RSA' ? ['e', 'kty', 'n'] : ['crv', 'kty', 'x']
    const canonical = JSON.stringify(Object.fromEntries(members.map((m) => [m, jwk[m as keyof JsonWebKey]])))
    const jkt = createHash('sha256').update(canonical).digest('base64url')
    known = { alg, key: createPublicKey({ key: jwk, format: 'jwk' }), jkt, params }
    proofKeys.set(header, known)
  }
  const { hash, options } = PROOF_PARAMS[known.alg] as { hash: string | null; options: object }
  const input = Buffer.from(`${header}.${payload}`)
  const bytes = Buffer.from(signature, 'base64url')
  const check = () => verify(hash, input, { key: known.key, ...options } as never, bytes)
  if (!(signer === 'crypto-batch' ? await verifyLater(check) : check())) return undefined
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
  const now = Math.floor(Date.now() / 1000)
  const { jti, htm, iat } = claims
  if (typeof jti !== 'string' || htm !== 'POST' || claims.htu !== htu) return undefined
  if (typeof iat !== 'number' || iat < now - 300 || iat > now + 5) return undefined
  const spent = `${known.jkt}:${jti}`
  if (spentJtis.has(spent)) return undefined
  spentJtis.set(spent, iat + 301)
  return known.jkt
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
  const form = await readBody(request)
  const params = new URLSearchParams(form)
  const grantType = params.get('grant_type')
  if (request.url === '/token' && (grantType === 'authorization_code' || grantType === 'refresh_token')) {
    const { status, body } = await userGrants.token(request.headers.authorization, form)
    response.writeHead(status, CEILING_HEADERS)
    return void response.end(body)
  }
  const clientId = authenticate(request.headers.authorization)
  if (!clientId) return send(response, 401, { error: 'invalid_client' })
  if (request.url === '/token') {
    if (params.get('grant_type') !== 'client_credentials')
      return send(response, 400, { error: 'unsupported_grant_type' })
    if ((params.get('scope') ?? API_SCOPE) !== API_SCOPE) return send(response, 400, { error: 'invalid_scope' })
    const proof = request.headers.dpop
    let jkt: string | undefined
    if (proof !== undefined && signer !== 'jose') {
      // One DPoP header, one proof (a repeated header arrives as an array).
      jkt = typeof proof === 'string' ? await checkProof(proof, `${issuer}/token`) : undefined
      if (jkt === undefined) return send(response, 400, { error: 'invalid_dpop_proof' })
    }
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
      ...(jkt !== undefined ? { cnf: { jkt } } : {}),
    }
    const tokenType = jkt !== undefined ? 'DPoP' : 'Bearer'
    return send(response, 200, { access_token: await signAccessToken(claims), token_type: tokenType, expires_in: 3600 })
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
