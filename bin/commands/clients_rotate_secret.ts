/**
 * `gatehouse clients rotate-secret ID`: adds a new secret and retires the others after a grace
 * period (in-memory store: replaces the file's secret). A generated secret is printed once.
 */
import { generateSecret, secretId } from '../../src/clients/index.ts'
import { hashSecret } from '../../src/index.ts'
import { CliError, defineCommand, readSecret } from '../args.ts'
import { editClients, fileClientIndex } from '../clients_file.ts'
import { iso, json, nowSeconds, out, progress } from '../io.ts'
import { type Setup, hashIterations, requireFile, setup, withService } from '../setup.ts'

type Added = { id: string; createdAt: number }
type Retired = { id: string; expiresAt: number }

/** One rotation: the client, the new secret (given or generated) and how to report it. */
interface Rotation {
  id: string
  secret: string
  finish(added: Added, retired: Retired[]): number
}

/** The in-memory mode: the file's secret is replaced by the new one, hashed. */
async function rotateInFile(config: Setup, rotation: Rotation, graceGiven: boolean): Promise<number> {
  const { id } = rotation
  const { path, text, file } = requireFile(config)
  const index = fileClientIndex(config, id)
  if (file.clients[index]?.clientSecret === undefined) {
    throw new CliError(`client "${id}" is public: it has no secret to rotate`, 1)
  }
  const hash = await hashSecret(rotation.secret, hashIterations(config))
  const entry = (JSON.parse(text) as { clients: Record<string, unknown>[] }).clients[index] as Record<string, unknown>
  await editClients(config, { op: 'replace', index, entry: { ...entry, clientSecret: hash } })
  const added = { id: secretId({ hash, createdAt: 0 }), createdAt: nowSeconds() }
  progress(`Replaced the secret of client "${id}" in ${path} (new secret ${added.id}).`)
  progress(
    `The in-memory store loads the file at start: a running server accepts the old secret until it restarts${
      graceGiven ? ' (--grace does not apply)' : ''
    }.`,
  )
  return rotation.finish(added, [])
}

/** A persistent store: adds the secret, retires the others `grace` seconds from now. */
async function rotateInStore(config: Setup, rotation: Rotation, grace: number): Promise<number> {
  const { id } = rotation
  // The file is the source of truth for the clients it lists (#17.3): a secret rotated here would
  // be replaced by the file's at the next start once the file's secret was retired.
  if (config.file?.clients.some((client) => client.clientId === id)) {
    throw new CliError(
      `client "${id}" is listed in ${config.configPath}, which decides its secret: change clientSecret there (the next start applies it), or remove the client from the file to rotate it here`,
      1,
    )
  }
  return withService(config, async (service) => {
    const client = await service.clients.find(id)
    if (!client) throw new CliError(`client "${id}" does not exist`, 1)
    if (client.type === 'public') throw new CliError(`client "${id}" is public: it has no secret to rotate`, 1)
    const { secret: _secret, ...added } = await service.clients.addSecret(id, { secret: rotation.secret })
    progress(`Added secret ${added.id} to client "${id}"`)
    const at = nowSeconds() + grace
    const retired: Retired[] = []
    for (const old of client.secrets) {
      // Already expired, or expiring within the grace period anyway: nothing to do.
      if (old.expiresAt !== undefined && old.expiresAt <= at) continue
      await service.clients.retireSecret(id, old.id, { at })
      retired.push({ id: old.id, expiresAt: at })
      progress(`Retired secret ${old.id}: it stops working ${grace === 0 ? 'now' : `at ${iso(at)}`}`)
    }
    return rotation.finish(added, retired)
  })
}

export const clientsRotateSecret = defineCommand({
  name: 'clients rotate-secret',
  summary: 'add a new secret; the others stop working after a grace period',
  positionals: ['ID'],
  description: `Adds a new secret to the client (generated and printed once on stdout, unless --secret is
given) and retires every other secret: they keep working for the grace period, then stop.
Deploy the new secret to the client within that time. Running servers see the change within 5 s.`,
  flags: {
    grace: {
      type: 'string',
      value: 'SECONDS',
      default: '86400',
      description: 'how long the old secrets keep working; 0: stop now',
    },
    secret: {
      type: 'string',
      value: 'S',
      description: 'the new secret, at least 16 characters ("-": read it from stdin; prefer it to a value in argv)',
    },
    json: { type: 'boolean', description: 'print {clientId, added, retired} as JSON' },
  },
  notes: `With the in-memory store the file's secret is replaced by the new one (hashed); a running server
keeps accepting the old one until it restarts with the file, so --grace does not apply. With
another store, a client the configuration file lists is refused: the file decides its secret.`,
  async run({ values, positionals: [id = ''], given, usageError }) {
    if (!/^\d{1,10}$/.test(values.grace)) {
      throw usageError(`--grace must be a number of seconds, got ${JSON.stringify(values.grace)}`)
    }
    const grace = Number(values.grace)
    const chosen = await readSecret(values.secret, usageError)
    if (chosen !== undefined && chosen.length < 16) throw usageError('--secret must be at least 16 characters')
    const generated = chosen === undefined ? generateSecret() : undefined
    const config = await setup(values)
    const rotation: Rotation = {
      id,
      secret: chosen ?? (generated as string),
      finish(added, retired) {
        if (values.json) {
          json({ clientId: id, added: { ...added, ...(generated ? { secret: generated } : {}) }, retired })
        } else if (generated) {
          progress('The new secret, shown this once (only a hash is stored):')
          out(generated)
        }
        return 0
      },
    }
    if (config.store.type === 'memory') return rotateInFile(config, rotation, given('grace'))
    return rotateInStore(config, rotation, grace)
  },
})
