/**
 * `gatehouse clients add`: registers a client through the host API, or (in-memory store) adds it to
 * the configuration file with its secret hashed. A generated secret is printed once, on stdout.
 */
import { type ClientRegistration, generateSecret, parseClientRegistration } from '../../src/clients/index.ts'
import { hashSecret } from '../../src/index.ts'
import { isSecretHash } from '../../src/security/index.ts'
import { defineCommand, readSecret } from '../args.ts'
import { editClients, fileClientInfo } from '../clients_file.ts'
import { json, out, progress } from '../io.ts'
import { type Setup, hashIterations, requireFile, setup, withService } from '../setup.ts'

/** Flags of `clients add` by registration field, to name them in validation errors. */
const FIELD_FLAGS: Record<string, string> = {
  clientId: '--id',
  clientSecret: '--secret',
  displayName: '--name',
  permissions: '--permission',
  redirectUris: '--redirect-uri',
  postLogoutRedirectUris: '--post-logout-redirect-uri',
  allowedNetworks: '--network',
  backchannelLogoutUri: '--backchannel-logout-uri',
}

function explainRegistrationError(err: Error, registration: Record<string, unknown>): string {
  const lines = err.message.split('\n').slice(1)
  const explained = lines.map((line) => {
    if (line.includes('public client cannot use client_credentials')) {
      return 'gt:client_credentials needs a secret: add --generate-secret or --secret S'
    }
    if (line.includes('public client cannot use token exchange')) {
      return 'gt:urn:ietf:params:oauth:grant-type:token-exchange needs a secret: add --generate-secret or --secret S'
    }
    const match = /^(\w+)(?:\.(\d+))?: (.*)$/.exec(line)
    const flag = match && FIELD_FLAGS[match[1] as string]
    if (!match || !flag) return line
    const [, field = '', index, message] = match
    const list = registration[field]
    const value =
      field !== 'clientSecret' && index !== undefined && Array.isArray(list) ? list[Number(index)] : undefined
    return `${flag}${value !== undefined ? ` ${JSON.stringify(value)}` : ''}: ${message}`
  })
  return `invalid client\n${explained.join('\n')}`
}

/** The in-memory mode: adds the client to the configuration file (its secret hashed). */
async function addToFile(
  config: Setup,
  registration: ClientRegistration,
  report: (created: boolean, client: unknown) => void,
): Promise<number> {
  const { clientId: id, clientSecret: secret } = registration
  const { path, file } = requireFile(config)
  const existing = file.clients.find((client) => client.clientId === id)
  if (existing) {
    report(false, fileClientInfo(existing))
    return 0
  }
  const entry: Record<string, unknown> = { ...registration }
  if (secret !== undefined && !isSecretHash(secret))
    entry.clientSecret = await hashSecret(secret, hashIterations(config))
  await editClients(config, { op: 'add', entry })
  progress(
    `Added client "${id}" (${secret === undefined ? 'public' : 'confidential'}) to ${path}; restart the server to load it`,
  )
  report(true, fileClientInfo(parseClientRegistration(entry)))
  return 0
}

export const clientsAdd = defineCommand({
  name: 'clients add',
  summary: 'register a client',
  description: `Registers a client. An id that is already registered is skipped (nothing changes; exit 0).
A generated secret is printed once, on stdout: only its hash is stored.`,
  flags: {
    id: { type: 'string', value: 'ID', required: true, description: 'client id' },
    permission: {
      type: 'string',
      value: 'P',
      multiple: true,
      required: true,
      description:
        'ept:token, gt:client_credentials, gt:urn:ietf:params:oauth:grant-type:token-exchange, scp:api1, ...\n(device sign-in, public clients too: ept:device_authorization, gt:urn:ietf:params:oauth:grant-type:device_code)\n(scopes: scp:openid, scp:profile, scp:email, scp:address, scp:phone, configured ones)',
    },
    secret: {
      type: 'string',
      value: 'S',
      conflicts: 'generate-secret',
      description:
        'the client\'s secret ("-": read it from stdin; prefer "-": a value here shows in ps and shell history)',
    },
    'generate-secret': {
      type: 'boolean',
      description: 'generate a random 256-bit secret and print it\n(neither: a public client, which must use PKCE)',
    },
    name: { type: 'string', value: 'NAME', description: 'display name (default: the id)' },
    'redirect-uri': { type: 'string', value: 'U', multiple: true, description: 'redirect URI for the code flow' },
    'post-logout-redirect-uri': {
      type: 'string',
      value: 'U',
      multiple: true,
      description: 'post-logout redirect URI',
    },
    'backchannel-logout-uri': {
      type: 'string',
      value: 'U',
      description: 'where logout tokens go when a session it took part in ends (Back-Channel Logout)',
    },
    'backchannel-logout-session-required': {
      type: 'boolean',
      description: 'its logout tokens must carry sid (they always do)',
    },
    network: {
      type: 'string',
      value: 'CIDR',
      multiple: true,
      description: 'only accept the client from this network',
    },
    json: { type: 'boolean', description: 'print {created, client, secret?} as JSON' },
  },
  notes: `With the in-memory store the client (its secret hashed) is added to the configuration file.

Examples:
  gatehouse clients add --id reporting-job --generate-secret \\
    --permission ept:token --permission gt:client_credentials --permission scp:api1
  gatehouse clients add --id my-cli --permission ept:device_authorization --permission ept:token \\
    --permission gt:urn:ietf:params:oauth:grant-type:device_code --permission scp:openid`,
  async run({ values, usageError }) {
    const id = values.id
    const generated = values['generate-secret'] ? generateSecret() : undefined
    const secret = generated ?? (await readSecret(values.secret, usageError))
    const list = (name: 'redirect-uri' | 'post-logout-redirect-uri' | 'network') => values[name]
    const registration = {
      clientId: id,
      ...(secret !== undefined ? { clientSecret: secret } : {}),
      ...(values.name !== undefined ? { displayName: values.name } : {}),
      permissions: values.permission,
      ...(list('redirect-uri').length > 0 ? { redirectUris: list('redirect-uri') } : {}),
      ...(list('post-logout-redirect-uri').length > 0
        ? { postLogoutRedirectUris: list('post-logout-redirect-uri') }
        : {}),
      ...(list('network').length > 0 ? { allowedNetworks: list('network') } : {}),
      ...(values['backchannel-logout-uri'] !== undefined
        ? { backchannelLogoutUri: values['backchannel-logout-uri'] }
        : {}),
      ...(values['backchannel-logout-session-required'] ? { backchannelLogoutSessionRequired: true } : {}),
    } satisfies ClientRegistration
    try {
      parseClientRegistration(registration)
    } catch (err) {
      throw usageError(explainRegistrationError(err as Error, registration))
    }
    const config = await setup(values)
    const report = (created: boolean, client: unknown) => {
      if (values.json) json({ created, client, ...(created && generated ? { secret: generated } : {}) })
      if (!created) {
        progress(
          `Client "${id}" already exists: skipped, nothing changed (a new secret: gatehouse clients rotate-secret ${id})`,
        )
      } else if (generated && !values.json) {
        progress('Its secret, shown this once (only a hash is stored):')
        out(generated)
      }
    }
    if (config.store.type === 'memory') return addToFile(config, registration, report)
    return withService(config, async (service) => {
      const { created, client } = await service.clients.ensure(registration)
      if (created) progress(`Registered client "${id}" (${client.type})`)
      report(created, client)
      return 0
    })
  },
})
