/**
 * `gatehouse migrate`: the SQL migrations of the PostgreSQL, PGlite or SQLite store (bin/migrate.ts);
 * with `--print DIALECT`, the migrations as one SQL script on stdout instead (nothing is opened),
 * for tools that apply schema files themselves (`wrangler d1 migrations apply`, #28 item 7).
 */
import { migrationScript, postgresDialect, sqliteDialect } from '../../src/storage/index.ts'
import { CliError, defineCommand } from '../args.ts'
import { out } from '../io.ts'
import { migrateStore } from '../migrate.ts'
import { setup } from '../setup.ts'

export const migrate = defineCommand({
  name: 'migrate',
  summary: 'apply the SQL migrations (PostgreSQL, PGlite, SQLite), or print them',
  description: `Applies the pending SQL migrations of the PostgreSQL, PGlite or SQLite store (the server also runs
them when it starts). Safe to run from several instances at once; prints "up to date" when there is
nothing to apply. With --print, prints the migrations as one SQL script instead and opens nothing: each
migration is recorded in gatehouse_migrations, so a store the script was applied to finds nothing pending
(e.g. a Cloudflare D1 database: npx gatehouse migrate --print sqlite > migrations/0001_gatehouse.sql,
then wrangler d1 migrations apply).`,
  flags: {
    print: {
      type: 'string',
      value: 'DIALECT',
      choices: ['sqlite', 'postgres'],
      description: 'print the migrations as SQL instead of applying them (postgres: in GATEHOUSE_PG_SCHEMA)',
    },
    from: {
      type: 'string',
      value: 'VERSION',
      description: 'with --print: only the migrations from this version on (for the next migration file)',
    },
  },
  async run({ values, usageError }) {
    if (values.from !== undefined && values.print === undefined) throw usageError('--from needs --print')
    if (values.print !== undefined) {
      const from = values.from === undefined ? 1 : Number(values.from)
      if (!Number.isInteger(from) || from < 1) throw usageError(`--from must be a version number, got ${values.from}`)
      const dialect =
        values.print === 'postgres' ? postgresDialect(process.env.GATEHOUSE_PG_SCHEMA || 'public') : sqliteDialect()
      process.stdout.write(migrationScript(dialect, from))
      return 0
    }
    const config = await setup(values)
    try {
      out(await migrateStore(config.store))
    } catch (err) {
      throw new CliError((err as Error).message, 1)
    }
    return 0
  },
})
