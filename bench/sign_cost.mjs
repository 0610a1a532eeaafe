// The cost of one JWS signature in isolation, per algorithm and per crypto path, on the runtime
// that runs this file (#20: the floor under every token the service signs):
//   node bench/sign_cost.mjs · node_modules/.bin/bun bench/sign_cost.mjs
//   node_modules/.bin/deno run --allow-read --allow-env bench/sign_cost.mjs
// Prints one JSON line per (path, alg): microseconds per signature (median of 5 batches), after a
// warm-up. `webcrypto` is jose's path (crypto.subtle.sign, awaited one at a time); `node:crypto`
// is the synchronous crypto.sign that nodeSigner() uses (Bun and Deno implement it too).
import * as nodeCrypto from 'node:crypto'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'

const runtime = globalThis.Deno
  ? `deno ${Deno.version.deno}`
  : globalThis.Bun
    ? `bun ${Bun.version}`
    : `node ${process.versions.node}`
const ALGS = ['ES256', 'EdDSA', 'RS256', 'PS256']
const BATCH = Number(globalThis.process?.env?.SIGN_BATCH ?? 200)
const payload = { sub: 'client-1', scope: 'api1', aud: 'api1', iss: 'https://issuer.example', jti: 'x'.repeat(22) }

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

async function timeBatches(signOnce) {
  for (let i = 0; i < BATCH; i++) await signOnce() // warm-up
  const perOp = []
  for (let round = 0; round < 5; round++) {
    const started = performance.now()
    for (let i = 0; i < BATCH; i++) await signOnce()
    perOp.push(((performance.now() - started) * 1000) / BATCH)
  }
  return Math.round(median(perOp) * 10) / 10
}

const NODE_ALG = {
  ES256: { digest: 'sha256', options: { dsaEncoding: 'ieee-p1363' } },
  EdDSA: { digest: null, options: {} },
  RS256: { digest: 'sha256', options: {} },
  PS256: { digest: 'sha256', options: { padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } },
}

for (const alg of ALGS) {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  })
  const webcrypto = await timeBatches(() =>
    new SignJWT(payload).setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' }).sign(privateKey),
  )
  console.log(JSON.stringify({ runtime, path: 'webcrypto (jose)', alg, microseconds: webcrypto }))
  let keyObject
  try {
    keyObject = nodeCrypto.createPrivateKey({ key: await exportJWK(privateKey), format: 'jwk' })
  } catch {
    keyObject = undefined
  }
  if (!keyObject) continue
  const input = new TextEncoder().encode('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJjbGllbnQtMSJ9')
  const { digest, options } = NODE_ALG[alg]
  try {
    const nodeCost = await timeBatches(() => nodeCrypto.sign(digest, input, { key: keyObject, ...options }))
    console.log(JSON.stringify({ runtime, path: 'node:crypto', alg, microseconds: nodeCost }))
  } catch (error) {
    console.log(JSON.stringify({ runtime, path: 'node:crypto', alg, error: String(error?.message ?? error) }))
  }
}
