/** `gatehouse grants list --sub SUB`: what each client may do for an end-user (#42). */
import { defineCommand } from '../args.ts'
import { json, out, progress } from '../io.ts'
import { grantTable } from '../listing.ts'
import { requireGrantStore, setup, withService } from '../setup.ts'

export const grantsList = defineCommand({
  name: 'grants list',
  summary: "list an end-user's grants",
  description: `Lists the live grants of the end-user SUB, newest first: the grant id, the client, the scopes,
resources and authorization details types, how it was made, when, and when last used (to the minute).`,
  flags: {
    sub: { type: 'string', required: true, description: "the end-user's subject identifier (sub)" },
    client: { type: 'string', value: 'ID', description: "only this client's grants" },
    json: { type: 'boolean', description: "the grants as JSON (the host API's GrantView)" },
  },
  async run({ values }) {
    const config = await setup(values)
    requireGrantStore(config)
    const grants = await withService(config, (service) =>
      service.grants.list(values.sub, values.client !== undefined ? { clientId: values.client } : {}),
    )
    if (values.json) json(grants)
    else if (grants.length === 0) progress(`No grants for "${values.sub}".`)
    else out(grantTable(grants))
    return 0
  },
})
