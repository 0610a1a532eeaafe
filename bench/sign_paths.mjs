// #31: every correct signing path this runtime offers for the service's algorithms, timed the same
// way as sign_cost.mjs (median of 5 batches after a warm-up, µs per signature):
//   node bench/sign_paths.mjs · node_modules/.bin/bun bench/sign_paths.mjs
//   node_modules/.bin/deno run --allow-read --allow-env bench/sign_paths.mjs
// Paths: jose's SignJWT (WebCrypto), crypto.subtle.sign directly (no JOSE layer), node:crypto's
// sign with a key imported from the JWK, from PKCS#8 DER and from PEM, and node:crypto's sign in
// back-to-back batches of 16 (what a per-turn batching signer does under load). Each signature is
// verified once with WebCrypto before timing: a path that signs wrongly is reported, not timed.
import * as nodeCrypto from 'node:crypto'
import process from 'node:process'
import { SignJWT, exportJWK, exportPKCS8, generateKeyPair, importJWK } from 'jose'

const runtime = globalThis.Deno
  ? `deno ${Deno.version.deno}`
  : globalThis.Bun
    ? `bun ${Bun.version}`
    : `node ${process.versions.node}`
const BATCH = Number(globalThis.process?.env?.SIGN_BATCH ?? 200)
const ONLY = (globalThis.process?.env?.SIGN_ALGS ?? 'ES256,RS256').split(',')
const payload = { sub: 'client-1', scope: 'api1', aud: 'api1', iss: 'https://issuer.example', jti: 'x'.repeat(22) }
const input = new TextEncoder().encode('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJjbGllbnQtMSJ9')

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
// Wall time and the process's CPU time (all threads: WebCrypto may sign on a worker thread) per
// signature. On a shared machine the CPU time is the figure to compare: other processes stretch
// the wall time, not the CPU this process spends.
async function time(signOnce, perCall = 1) {
  for (let i = 0; i < BATCH; i += perCall) await signOnce()
  const wall = []
  const cpu = []
  for (let round = 0; round < 5; round++) {
    const started = performance.now()
    const cpuStarted = process.cpuUsage()
    for (let i = 0; i < BATCH; i += perCall) await signOnce()
    const used = process.cpuUsage(cpuStarted)
    wall.push(((performance.now() - started) * 1000) / BATCH)
    cpu.push((used.user + used.system) / BATCH)
  }
  return { microseconds: Math.round(median(wall) * 10) / 10, cpuMicroseconds: Math.round(median(cpu) * 10) / 10 }
}
const WEB = {
  ES256: { name: 'ECDSA', hash: 'SHA-256' },
  RS256: { name: 'RSASSA-PKCS1-v1_5' },
}
const NODE = { ES256: { dsaEncoding: 'ieee-p1363' }, RS256: {} }

for (const alg of ONLY) {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const jwk = await exportJWK(privateKey)
  const pem = await exportPKCS8(privateKey)
  const webKey = await importJWK(jwk, alg)
  const check = async (signature) => crypto.subtle.verify(WEB[alg], publicKey, signature, input).catch(() => false)
  const report = async (path, signOne, run) => {
    try {
      const ok = await check(await signOne())
      const timing = ok ? await run() : undefined
      console.log(JSON.stringify({ runtime, alg, path, ...(ok ? timing : { error: 'wrong signature' }) }))
    } catch (error) {
      console.log(JSON.stringify({ runtime, alg, path, error: String(error?.message ?? error) }))
    }
  }
  await report(
    'jose SignJWT (WebCrypto)',
    () => crypto.subtle.sign(WEB[alg], webKey, input),
    () => time(() => new SignJWT(payload).setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' }).sign(webKey)),
  )
  await report(
    'crypto.subtle.sign',
    () => crypto.subtle.sign(WEB[alg], webKey, input),
    () => time(() => crypto.subtle.sign(WEB[alg], webKey, input)),
  )
  const keys = {
    jwk: () => nodeCrypto.createPrivateKey({ key: jwk, format: 'jwk' }),
    pem: () => nodeCrypto.createPrivateKey(pem),
    der: () =>
      nodeCrypto.createPrivateKey({
        key: nodeCrypto.createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' }),
        format: 'der',
        type: 'pkcs8',
      }),
  }
  for (const [name, make] of Object.entries(keys)) {
    let key
    try {
      key = make()
    } catch (error) {
      console.log(JSON.stringify({ runtime, alg, path: `node:crypto sign, key from ${name}`, error: String(error) }))
      continue
    }
    const one = () => nodeCrypto.sign('sha256', input, { key, ...NODE[alg] })
    await report(`node:crypto sign, key from ${name}`, one, () => time(one))
    if (name === 'jwk')
      await report('node:crypto sign ×16 back to back', one, () =>
        time(() => {
          for (let i = 0; i < 16; i++) one()
        }, 16),
      )
  }
}
