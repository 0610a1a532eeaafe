/**
 * `gatehouse migrate` (and `npm run migrate` in this repository): applies the SQL migrations of the
 * store chosen as for `npm start` (DATABASE_URL with GATEHOUSE_PG_SCHEMA, or GATEHOUSE_STORE=pglite
 * or sqlite with GATEHOUSE_DATA_DIR, or the configuration file's "store").
 */
import { pathToFileURL } from 'node:url'
import type { StoreConfig } from '../src/config/index.ts'
import { mkdirSync } from 'node:fs'
import { chooseStore, describeStore, sqliteFile } from './store.ts'

/** Applies the pending migrations; resolves with the line to print, rejects with a message. */
export async function migrateStore(config: StoreConfig): Promise<string> {
  if (config.type !== 'postgres' && config.type !== 'pglite' && config.type !== 'sqlite') {
    throw new Error(
      `set DATABASE_URL (PostgreSQL) or GATEHOUSE_STORE=pglite or sqlite; nothing to migrate for ${config.type}`,
    )
  }
  if (config.type === 'sqlite') mkdirSync(config.dataDir, { recursive: true })
  const store =
    config.type === 'postgres'
      ? (await import('../src/storage/postgres.ts')).createPostgresStore({
          url: config.url,
          ...(config.schema ? { schema: config.schema } : {}),
        })
      : config.type === 'sqlite'
        ? (await import('../src/storage/sqlite.ts')).createSqliteStore({ path: sqliteFile(config.dataDir) })
        : (await import('../src/storage/pglite.ts')).createPgliteStore({ dataDir: config.dataDir })
  try {
    if ('connect' in store && typeof store.connect === 'function') await store.connect()
    const applied = await store.migrate()
    return `${describeStore(config)}: ${applied.length === 0 ? 'up to date' : `applied migration(s) ${applied.join(', ')}`}`
  } finally {
    await store.close()
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    console.log(await migrateStore(chooseStore((name) => process.env[name], undefined)))
  } catch (err) {
    console.error(`gatehouse migrate: ${(err as Error).message}`)
    process.exit(1)
  }
}
