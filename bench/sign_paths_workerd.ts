/**
 * #31: the signing paths of workerd for the ceiling's two algorithms, as sign_paths.mjs does for
 * Node, Bun and Deno: WebCrypto (`crypto.subtle.sign`, what `ceiling-workers` and Gatehouse on
 * workerd use) against node:crypto's `sign` under `nodejs_compat`, with the key as PEM, as PKCS#8
 * DER and as a KeyObject passed directly (workerd's `sign` rejects a KeyObject inside an options
 * object, and with a bare KeyObject ES256 comes out DER-encoded, not as a JWS signature, so it is
 * timed for RS256 only). Each path's last signature is verified in Node with the public JWK: a path
 * that signs wrongly stops the run. Figure: CPU µs of the workerd process per signature (all its
 * threads, from /proc), the median of 4 timed rounds after a warm-up round, paths alternating.
 *
 *   GATEHOUSE_NODE22=… $GATEHOUSE_NODE22 --import tsx bench/sign_paths_workerd.ts
 */
import { createPublicKey, verify } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { COMPATIBILITY_DATE, createMiniflare, miniflareOptions } from '../bin/workerd.ts'
import { descendants } from './servers/process_tree.ts'

const INPUT = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0'.repeat(8)
const worker = `
import { createPrivateKey, sign } from 'node:crypto'
const WEB = { ES256: { name: 'ECDSA', hash: 'SHA-256' }, RS256: { name: 'RSASSA-PKCS1-v1_5' } }
const GEN = {
  ES256: { name: 'ECDSA', namedCurve: 'P-256' },
  RS256: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
}
const data = new TextEncoder().encode(${JSON.stringify(INPUT)})
const keys = {}
async function keyOf(alg) {
  if (keys[alg]) return keys[alg]
  const pair = await crypto.subtle.generateKey(GEN[alg], true, ['sign', 'verify'])
  const object = createPrivateKey({ key: await crypto.subtle.exportKey('jwk', pair.privateKey), format: 'jwk' })
  keys[alg] = {
    web: pair.privateKey,
    public: await crypto.subtle.exportKey('jwk', pair.publicKey),
    pem: object.export({ format: 'pem', type: 'pkcs8' }),
    der: object.export({ format: 'der', type: 'pkcs8' }),
    object,
  }
  return keys[alg]
}
export default {
  async fetch(request) {
    const url = new URL(request.url)
    const alg = url.searchParams.get('alg')
    const path = url.searchParams.get('path')
    const key = await keyOf(alg)
    const ec = alg === 'ES256' ? { dsaEncoding: 'ieee-p1363' } : {}
    let signature
    for (let i = 0; i < Number(url.searchParams.get('n')); i++) {
      if (path === 'webcrypto') signature = new Uint8Array(await crypto.subtle.sign(WEB[alg], key.web, data))
      else if (path === 'node PEM') signature = sign('sha256', data, { key: key.pem, ...ec })
      else if (path === 'node DER') signature = sign('sha256', data, { key: key.der, format: 'der', type: 'pkcs8', ...ec })
      else signature = sign('sha256', data, key.object)
    }
    return Response.json({ signature: Array.from(signature), public: key.public })
  },
}`

const miniflare = await createMiniflare(await miniflareOptions({ port: 0, name: 'sign-paths', script: worker }))
const url = await miniflare.ready
const workerd = descendants(process.pid).find((p) => p.name === 'workerd')?.pid
if (!workerd) throw new Error('no workerd process')
const cpuMicros = (): number => {
  const fields = readFileSync(`/proc/${workerd}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100 // clock ticks of 10 ms
}

const PATHS = {
  ES256: ['webcrypto', 'node PEM', 'node DER'],
  RS256: ['webcrypto', 'node PEM', 'node DER', 'node KeyObject'],
}
const results = new Map<string, number[]>()
for (let round = 0; round < 5; round++) {
  for (const alg of ['ES256', 'RS256'] as const) {
    for (const path of PATHS[alg]) {
      const n = alg === 'ES256' ? 2000 : 300
      const before = cpuMicros()
      const query = new URLSearchParams({ alg, path, n: String(n) })
      const response = await miniflare.dispatchFetch(new URL(`/?${query}`, url))
      const body = (await response.json()) as { signature: number[]; public: object }
      const spent = (cpuMicros() - before) / n
      const key = createPublicKey({ key: body.public as never, format: 'jwk' })
      const options = alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : key
      if (!verify('sha256', Buffer.from(INPUT), options, Buffer.from(body.signature))) {
        throw new Error(`${alg} through ${path}: the signature does not verify`)
      }
      if (round > 0) results.set(`${alg} ${path}`, [...(results.get(`${alg} ${path}`) ?? []), spent])
    }
  }
}
await miniflare.dispose()
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
console.log(`workerd (Miniflare, compatibility date ${COMPATIBILITY_DATE}), CPU µs per signature, rounds and median:`)
for (const [name, values] of results) {
  console.log(
    `${name.padEnd(20)} ${values.map(Math.round).join(' / ').padEnd(28)} median ${Math.round(median(values))}`,
  )
}
