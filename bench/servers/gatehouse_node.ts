/**
 * Bench server: Gatehouse on Node through adapters/node.ts (@hono/node-server), as shipped.
 *
 * Environment: PORT, CODES, CODES_FILE (see gatehouse_setup.ts), and
 * - STORE=memory (default) | postgres (DATABASE_URL) | redis (REDIS_URL, or REDIS_CLUSTER_NODES for
 *   a Redis Cluster, #43: read by bin/store.ts as `npm start` reads them) | sqlite (#28: the file
 *   gatehouse.db in GATEHOUSE_DATA_DIR, opened as `GATEHOUSE_STORE=sqlite npm start` opens it;
 *   needs Node ≥ 22.5); PG_MAX=N: the PostgreSQL pool's size (default the store's, 10);
 * - SIGNER=inline: `nodeSigner({ batch: false })` instead of the default batched signer, and
 *   DPOP_VERIFIER=inline: `nodeDpopVerifier({ batch: false })` instead of the batched one;
 * - SEED_REFRESH_TOKENS=N: before listening, insert N live refresh tokens straight into the store
 *   and report the resident memory they take (run with --expose-gc for a settled heap).
 * Prints `READY {json}` once listening; the JSON carries the pid and the seeding measurements.
 */
import { createHash } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { nodeDpopVerifier, nodeServiceOptions, nodeSigner, serveNode } from '../../adapters/node.ts'
import type { RefreshTokenRecord, Store } from '../../src/index.ts'
import { sha256 } from '../../src/crypto/opaque.ts'
import { CODE_SCOPE, USER_SUB, WEB_CLIENT, seedTokenValue } from '../fixtures.ts'
import { setupGatehouse } from './gatehouse_setup.ts'

/**
 * The shared stores, each emptied first so that every measurement starts alike: PostgreSQL in the
 * schema `gatehouse_bench` (dropped and migrated), Redis (one node or a cluster) under the prefix
 * `gatehouse-bench:`; SQLite in a fresh folder (migrated as at start).
 */
async function openStore(kind: string): Promise<Store | undefined> {
  if (kind === 'memory') return undefined
  if (kind === 'sqlite') {
    // bench/run.ts gives every server process a fresh folder: the store starts empty.
    const dataDir = process.env.GATEHOUSE_DATA_DIR
    if (!dataDir) throw new Error('STORE=sqlite needs GATEHOUSE_DATA_DIR')
    const { openStore: openStartStore } = await import('../../bin/store.ts')
    return openStartStore({ type: 'sqlite', dataDir })
  }
  if (kind === 'postgres') {
    const url = process.env.DATABASE_URL
    if (!url) throw new Error('STORE=postgres needs DATABASE_URL')
    const { default: postgres } = await import('postgres')
    const admin = postgres(url, { max: 1, onnotice: () => {} })
    await admin.unsafe('DROP SCHEMA IF EXISTS gatehouse_bench CASCADE')
    await admin.end()
    const { createPostgresStore } = await import('../../src/storage/postgres.ts')
    const store = createPostgresStore({
      url,
      schema: 'gatehouse_bench',
      ...(process.env.PG_MAX ? { max: Number(process.env.PG_MAX) } : {}),
    })
    await store.connect()
    await store.migrate()
    return store
  }
  // Redis as the standalone server opens it (bin/store.ts): REDIS_URL, or a Redis Cluster's seed
  // nodes in REDIS_CLUSTER_NODES (#43), and whatever else its variables say; the prefix is ours.
  const { chooseStore, openStore: openStartStore } = await import('../../bin/store.ts')
  const ours: Record<string, string> = { GATEHOUSE_STORE: 'redis', GATEHOUSE_REDIS_PREFIX: 'gatehouse-bench:' }
  const env = (name: string) => ours[name] ?? process.env[name]
  const store = (await openStartStore(chooseStore(env, undefined))) as Store & { clear(): Promise<void> }
  await store.clear()
  return store
}

/** Settles the heap, then reads RSS and heap use. */
function memory(): { rss: number; heapUsed: number } {
  const gc = (globalThis as { gc?: () => void }).gc
  for (let i = 0; i < 3; i++) gc?.()
  const { rss, heapUsed } = process.memoryUsage()
  return { rss, heapUsed }
}

/** Inserts `count` refresh tokens of the web client, each in its own family, like issued ones. */
async function seedRefreshTokens(store: Store, count: number) {
  // Gatehouse keys a token by base64url SHA-256 of its value; node:crypto computes the same
  // digest much faster than a million Web Crypto calls. Checked against Gatehouse's own function.
  const key = (value: string) => createHash('sha256').update(value).digest('base64url')
  if (key(seedTokenValue(0)) !== (await sha256(seedTokenValue(0)))) throw new Error('token key mismatch')
  const now = Math.floor(Date.now() / 1000)
  const before = memory()
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const record: RefreshTokenRecord = {
      id: key(seedTokenValue(i)),
      familyId: `seed-family-${i}`,
      clientId: WEB_CLIENT.id,
      sub: USER_SUB,
      scope: CODE_SCOPE,
      sid: `seed-sid-${i % 1000}`,
      authTime: now,
      amr: ['pwd'],
      issuedAt: now,
      expiresAt: now + 1_209_600,
      familyExpiresAt: now + 7_776_000,
    }
    await store.refreshTokens.insert(record)
  }
  const seedSeconds = (performance.now() - started) / 1000
  const after = memory()
  return {
    seeded: count,
    seedSeconds,
    rssBefore: before.rss,
    rssAfter: after.rss,
    heapBefore: before.heapUsed,
    heapAfter: after.heapUsed,
  }
}

const store = await openStore(process.env.STORE ?? 'memory')
const service = await setupGatehouse({
  // The same runtime options as `npm start` (bin/serve_node.ts); SIGNER=inline signs each token in
  // its request's own turn instead of batching signatures per turn of the event loop.
  serviceOptions: {
    ...nodeServiceOptions(),
    ...(process.env.SIGNER === 'inline' ? { signer: nodeSigner({ batch: false }) } : {}),
    ...(process.env.DPOP_VERIFIER === 'inline' ? { dpopVerifier: nodeDpopVerifier({ batch: false }) } : {}),
  },
  env: (name) => process.env[name],
  writeTextFile: (path, text) => writeFile(path, text),
  ...(store ? { store } : {}),
})
const seedCount = Number(process.env.SEED_REFRESH_TOKENS ?? '0')
const seed = seedCount > 0 ? await seedRefreshTokens(service.store, seedCount) : undefined
await serveNode(service.fetch, { port: Number(process.env.PORT), hostname: process.env.HOST ?? '127.0.0.1' })
console.log(`READY ${JSON.stringify({ pid: process.pid, runtime: `node ${process.version}`, ...seed })}`)
