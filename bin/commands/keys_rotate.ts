/** `gatehouse keys rotate`: new signing keys published ahead; the current ones retire. */
import { SIGNING_ALGS } from '../../src/crypto/index.ts'
import type { SigningAlg } from '../../src/config/index.ts'
import { defineCommand } from '../args.ts'
import { iso, json, out, progress } from '../io.ts'
import { keyTable } from '../listing.ts'
import { requireKeyStore, setup, withService } from '../setup.ts'

export const keysRotate = defineCommand({
  name: 'keys rotate',
  summary: 'publish new signing keys; the current ones retire',
  description: `Publishes a new key per algorithm at once; it signs after keyPublishAhead seconds (default 300),
when the key it replaces retires (that one stays published while its tokens may be presented).`,
  flags: {
    alg: {
      type: 'string',
      multiple: true,
      choices: SIGNING_ALGS,
      description: 'rotate only this algorithm\n(default: every algorithm the service signs with)',
    },
    json: { type: 'boolean', description: 'the new keys as JSON' },
  },
  async run({ values }) {
    // Each --alg is one of SIGNING_ALGS: the choices are checked before run.
    const algorithms = values.alg as SigningAlg[]
    const config = await setup(values)
    requireKeyStore(config)
    const keys = await withService(config, (service) =>
      service.keys.rotate(algorithms.length > 0 ? { algorithms } : {}),
    )
    const from = keys[0]?.activatesAt
    progress(`Published ${keys.length} new key(s)${from !== undefined ? `, signing from ${iso(from)}` : ''}`)
    if (values.json) json(keys)
    else out(keyTable(keys))
    return 0
  },
})
