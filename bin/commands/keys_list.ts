/** `gatehouse keys list`: the signing keys of a persistent store, public metadata only. */
import { defineCommand } from '../args.ts'
import { json, out } from '../io.ts'
import { keyTable } from '../listing.ts'
import { requireKeyStore, setup, withService } from '../setup.ts'

export const keysList = defineCommand({
  name: 'keys list',
  summary: 'list the signing keys',
  description: `Lists the signing keys (public metadata only): signing now, next (published, signing from a
later time), retired (still published for tokens they signed). A store without keys gets them now,
as a starting server would.`,
  flags: {
    json: { type: 'boolean', description: "the keys as JSON (the host API's KeyInfo)" },
  },
  async run({ values }) {
    const config = await setup(values)
    requireKeyStore(config)
    const keys = await withService(config, (service) => service.keys.list())
    keys.sort((a, b) => a.activatesAt - b.activatesAt || a.alg.localeCompare(b.alg) || a.kid.localeCompare(b.kid))
    if (values.json) json(keys)
    else out(keyTable(keys))
    return 0
  },
})
