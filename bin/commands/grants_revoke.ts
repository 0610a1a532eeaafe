/** `gatehouse grants revoke ID` and `gatehouse grants revoke-all --sub SUB`: revoke grants (#42). */
import { CliError, defineCommand } from '../args.ts'
import { progress } from '../io.ts'
import { requireGrantStore, setup, withService } from '../setup.ts'

const EFFECT = `Every token of a revoked grant is dead at once, on every server: its access tokens are inactive at
introspection and refused at userinfo (resource servers that verify JWTs locally see it through
introspection or the resource-server helper's revocation check), its refresh tokens and a device or
CIBA request approved but not yet redeemed are refused.`

export const grantsRevoke = defineCommand({
  name: 'grants revoke',
  summary: 'revoke a grant',
  positionals: ['ID'],
  description: `Revokes the grant ID (the id "grants list" shows; the tokens' gid, the token response's grant_id).
${EFFECT}`,
  flags: {},
  async run({ values, positionals: [id = ''] }) {
    const config = await setup(values)
    requireGrantStore(config)
    return withService(config, async (service) => {
      if (!(await service.grants.revoke(id))) throw new CliError(`grant "${id}" does not exist (or was revoked)`, 1)
      progress(`Revoked grant "${id}"`)
      return 0
    })
  },
})

export const grantsRevokeAll = defineCommand({
  name: 'grants revoke-all',
  summary: "revoke all of an end-user's grants",
  description: `Revokes every live grant of the end-user SUB (only those of the client ID with --client).
${EFFECT}`,
  flags: {
    sub: { type: 'string', required: true, description: "the end-user's subject identifier (sub)" },
    client: { type: 'string', value: 'ID', description: "only this client's grants" },
  },
  async run({ values }) {
    const config = await setup(values)
    requireGrantStore(config)
    const count = await withService(config, (service) =>
      service.grants.revokeAll(values.sub, values.client !== undefined ? { clientId: values.client } : {}),
    )
    progress(`Revoked ${count} grant${count === 1 ? '' : 's'} of "${values.sub}"`)
    return 0
  },
})
