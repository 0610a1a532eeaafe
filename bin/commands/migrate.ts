/** `gatehouse migrate`: the SQL migrations of the PostgreSQL or PGlite store (bin/migrate.ts). */
import { CliError, defineCommand } from '../args.ts'
import { out } from '../io.ts'
import { migrateStore } from '../migrate.ts'
import { setup } from '../setup.ts'

export const migrate = defineCommand({
  name: 'migrate',
  summary: 'apply the SQL migrations (PostgreSQL, PGlite)',
  description: `Applies the pending SQL migrations of the PostgreSQL or PGlite store (the server also runs them
when it starts). Safe to run from several instances at once; prints "up to date" when there is nothing
to apply.`,
  flags: {},
  async run({ values }) {
    const config = await setup(values)
    try {
      out(await migrateStore(config.store))
    } catch (err) {
      throw new CliError((err as Error).message, 1)
    }
    return 0
  },
})
