/**
 * `npm run migrate`: applies the SQL migrations of the store chosen as for `npm start`
 * (DATABASE_URL with GATEHOUSE_PG_SCHEMA, or GATEHOUSE_STORE=pglite with GATEHOUSE_DATA_DIR).
 */
import { chooseStore, describeStore } from './store.ts'

const config = chooseStore((name) => process.env[name], undefined)
if (config.type !== 'postgres' && config.type !== 'pglite') {
  console.error(
    'gatehouse migrate: set DATABASE_URL (PostgreSQL) or GATEHOUSE_STORE=pglite; nothing to migrate for',
    config.type,
  )
  process.exit(1)
}
try {
  const store =
    config.type === 'postgres'
      ? (await import('../src/storage/postgres.ts')).createPostgresStore({
          url: config.url,
          ...(config.schema ? { schema: config.schema } : {}),
        })
      : (await import('../src/storage/pglite.ts')).createPgliteStore({ dataDir: config.dataDir })
  if ('connect' in store && typeof store.connect === 'function') await store.connect()
  const applied = await store.migrate()
  console.log(
    `${describeStore(config)}: ${applied.length === 0 ? 'up to date' : `applied migration(s) ${applied.join(', ')}`}`,
  )
  await store.close()
} catch (err) {
  console.error(`gatehouse migrate: ${(err as Error).message}`)
  process.exit(1)
}
