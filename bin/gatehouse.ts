/**
 * `npx gatehouse`: the operator's command line (bin/gatehouse.mjs runs it through tsx).
 *
 * `serve` is `npm start` (bin/serve_node.ts, same flags and environment). `clients ...` and
 * `keys ...` work on the store `npm start` would use (bin/store.ts) through the host API of
 * `createTokenService`. With the in-memory store there is nothing outside a running server to
 * change: the client commands edit the configuration file's `clients` instead, and the key
 * commands fail.
 *
 * Results (tables, JSON, a secret just generated) go to stdout; progress and errors to stderr.
 * Exit status: 0 done, 1 failed, 2 bad command line. Stored secrets are never printed.
 */
import { chmod, readFile, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { generateSecret, secretId } from '../src/clients.ts'
import { type ClientRegistration, SIGNING_ALGS, type SigningAlg, parseClientRegistration } from '../src/config.ts'
import { type ConfigFile, type StoreConfig, parseConfigFile } from '../src/config_file.ts'
import { type KeyInfo, type TokenService, createTokenService, hashSecret } from '../src/index.ts'
import { isSecretHash } from '../src/secrets.ts'
import { migrateStore } from './migrate.ts'
import { chooseStore, describeStore, openStore } from './store.ts'

type Options = NonNullable<ParseArgsConfig['options']>
type Values = Record<string, string | boolean | (string | boolean)[] | undefined>

/** A failure to report without a stack: status 1 (could not be done) or 2 (bad command line). */
class CliError extends Error {
  readonly status: 1 | 2
  readonly usage: string | undefined

  constructor(message: string, status: 1 | 2, usage?: string) {
    super(message)
    this.status = status
    this.usage = usage
  }
}

interface Command {
  /** `clients add` */
  name: string
  summary: string
  /** The usage lines, shown with errors and on top of the help. */
  usage: string
  /** The rest of `--help`. */
  details: string
  options: Options
  /** Names of the required positional arguments. */
  positionals: string[]
  run(values: Values, positionals: string[], args: string[]): Promise<number | undefined>
}

const COMMON = `Common options:
  --config FILE   the configuration file (default: $GATEHOUSE_CONFIG)
  -h, --help      this help`

const STORE_NOTE = `The store is chosen as by npm start: GATEHOUSE_STORE (memory, postgres, redis, pglite), else
DATABASE_URL (PostgreSQL, schema GATEHOUSE_PG_SCHEMA), else REDIS_URL (prefix GATEHOUSE_REDIS_PREFIX),
else the configuration file's "store", else memory. GATEHOUSE_STORE=pglite uses GATEHOUSE_DATA_DIR.`

const USAGE = `Usage: gatehouse <command> [options]

Commands:
  serve                       start the server (what npm start does)
  migrate                     apply the SQL migrations (PostgreSQL, PGlite)
  clients add                 register a client
  clients list                list the registered clients
  clients remove ID           delete a client
  clients rotate-secret ID    add a new secret; the others stop working after a grace period
  keys list                   list the signing keys
  keys rotate                 publish new signing keys; the current ones retire
  help [COMMAND]              help for a command (or: gatehouse COMMAND --help)

${STORE_NOTE}
With the in-memory store, "clients add|remove|rotate-secret" edit the configuration file's "clients"
(restart the server to load them) and "keys" commands fail: in-memory keys live in the server process.

Every command takes --config FILE (default $GATEHOUSE_CONFIG) and --help.
Results go to stdout, progress and errors to stderr. Exit status: 0 done, 1 failed, 2 bad command line.`

function env(name: string): string | undefined {
  return process.env[name]
}

function out(text: string): void {
  process.stdout.write(`${text}\n`)
}

function progress(text: string): void {
  process.stderr.write(`${text}\n`)
}

/** Hides credentials of URLs (`scheme://user:password@host` → `scheme://***@host`). */
function redact(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@\s/]*@/gi, '$1***@')
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000)
}

/** Left-aligned columns, two spaces apart. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)))
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

function json(value: unknown): void {
  out(JSON.stringify(value, null, 2))
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) progress('Reading the secret from standard input (end with Ctrl-D)...')
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '')
}

/** `--secret S`, `--secret -` (read from stdin) or undefined. */
async function secretOption(values: Values, command: Command): Promise<string | undefined> {
  const value = values.secret as string | undefined
  if (value === undefined) return undefined
  const secret = value === '-' ? await readStdin() : value
  if (secret === '') throw new CliError('--secret is empty', 2, command.usage)
  return secret
}

// --- configuration and store --------------------------------------------------------------------

interface Setup {
  configPath: string | undefined
  configText: string | undefined
  file: ConfigFile | undefined
  store: StoreConfig
}

/** Reads the configuration file and chooses the store, as `npm start` does. */
async function setup(values: Values): Promise<Setup> {
  const flag = values.config as string | undefined
  if (flag === '') throw new CliError('--config needs a file path', 2)
  const configPath = flag ?? (env('GATEHOUSE_CONFIG') || undefined)
  let configText: string | undefined
  let file: ConfigFile | undefined
  if (configPath !== undefined) {
    try {
      configText = await readFile(configPath, 'utf8')
    } catch (err) {
      throw new CliError(`cannot read configuration file ${configPath}: ${(err as Error).message}`, 1)
    }
    try {
      file = parseConfigFile(configText, configPath)
    } catch (err) {
      throw new CliError((err as Error).message, 1)
    }
  }
  try {
    return { configPath, configText, file, store: chooseStore(env, file?.store) }
  } catch (err) {
    throw new CliError((err as Error).message, 1)
  }
}

/** Opens the store, runs `fn` with a token service on it, closes the store. */
async function withService<T>(setup: Setup, fn: (service: TokenService) => Promise<T>): Promise<T> {
  progress(`Using the ${describeStore(setup.store)}`)
  let store: Awaited<ReturnType<typeof openStore>>
  try {
    store = await openStore(setup.store)
  } catch (err) {
    throw new CliError((err as Error).message, 1)
  }
  const {
    clients: _clients,
    users: _users,
    $schema: _schema,
    issuer,
    store: _store,
    pruneClients: _prune,
    ...settings
  } = setup.file ?? ({} as Partial<ConfigFile>)
  let service: TokenService
  try {
    // The issuer does not matter to client and key management; the settings (secret hashing,
    // signing algorithms, key lifetimes) are the server's.
    service = createTokenService({
      ...settings,
      issuer: issuer ?? 'http://localhost:3000',
      ...(store ? { store } : {}),
    })
  } catch (err) {
    await store?.close?.().catch(() => {})
    throw new CliError((err as Error).message, 1)
  }
  try {
    return await fn(service)
  } finally {
    await service.close().catch(() => {})
  }
}

const PERSISTENT = 'a persistent store (GATEHOUSE_STORE=pglite, DATABASE_URL or REDIS_URL)'

const MEMORY_CLIENTS = `the in-memory store keeps its clients inside the running server only.
Name the configuration file whose "clients" to edit with --config FILE (or GATEHOUSE_CONFIG), or use ${PERSISTENT}.`

const MEMORY_KEYS = `the in-memory store's signing keys live only inside a running server process
(generated when it starts, gone when it stops): there is nothing to list or rotate from here.
Use ${PERSISTENT} to manage keys from the command line.`

/** The configuration file the in-memory mode edits. */
function requireFile(setup: Setup): { path: string; text: string; file: ConfigFile } {
  if (setup.configPath === undefined || setup.configText === undefined || !setup.file) {
    throw new CliError(MEMORY_CLIENTS, 1)
  }
  return { path: setup.configPath, text: setup.configText, file: setup.file }
}

type Edit =
  | { op: 'add'; entry: Record<string, unknown> }
  | { op: 'remove'; index: number }
  | { op: 'replace'; index: number; entry: Record<string, unknown> }

/**
 * Where the top-level `clients` array and its elements are in a JSON text (already known to be
 * valid), so an edit can splice it and leave every other byte of the file as it was.
 */
function locateClients(text: string) {
  const ws = (i: number) => {
    while (i < text.length && ' \t\r\n'.includes(text[i] as string)) i++
    return i
  }
  const skip = (i: number): number => {
    const c = text[i]
    if (c === '"') {
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++
      return i + 1
    }
    if (c === '{' || c === '[') {
      let depth = 0
      for (; i < text.length; i++) {
        const d = text[i]
        if (d === '"') i = skip(i) - 1
        else if (d === '{' || d === '[') depth++
        else if ((d === '}' || d === ']') && --depth === 0) return i + 1
      }
      return i
    }
    while (i < text.length && !' \t\r\n,]}'.includes(text[i] as string)) i++
    return i
  }
  let array: [number, number] | undefined
  let lastValueEnd = -1
  let i = ws(0) + 1 // after `{`
  for (;;) {
    i = ws(i)
    if (text[i] === '}') break
    const keyEnd = skip(i)
    const key = JSON.parse(text.slice(i, keyEnd)) as string
    const valueStart = ws(ws(keyEnd) + 1) // after `:`
    const valueEnd = skip(valueStart)
    if (key === 'clients') array = [valueStart, valueEnd]
    lastValueEnd = valueEnd
    i = ws(valueEnd)
    if (text[i] === ',') i++
  }
  const elements: [number, number][] = []
  if (array && text[array[0]] === '[') {
    let j = array[0] + 1
    for (;;) {
      j = ws(j)
      if (text[j] === ']') break
      const end = skip(j)
      elements.push([j, end])
      j = ws(end)
      if (text[j] === ',') j++
    }
  }
  return { array, elements, lastValueEnd, objectStart: ws(0) }
}

/** The file's text after `edit`: a splice of the `clients` array, the rest byte for byte. */
function spliceClients(text: string, edit: Edit): string {
  const unit = /\n([ \t]+)"/.exec(text)?.[1] ?? '  '
  const { array, elements, lastValueEnd, objectStart } = locateClients(text)
  const firstElement = elements[0]
  const lineStart = firstElement ? text.lastIndexOf('\n', firstElement[0]) + 1 : 0
  const itemIndent =
    firstElement && /^[ \t]*$/.test(text.slice(lineStart, firstElement[0]))
      ? text.slice(lineStart, firstElement[0])
      : unit + unit
  const serialize = (entry: unknown) => JSON.stringify(entry, null, unit).replace(/\n/g, `\n${itemIndent}`)
  const replace = (from: number, to: number, by: string) => text.slice(0, from) + by + text.slice(to)
  switch (edit.op) {
    case 'add': {
      const item = serialize(edit.entry)
      const last = elements.at(-1)
      if (last) return replace(last[1], last[1], `,\n${itemIndent}${item}`)
      const list = `[\n${itemIndent}${item}\n${unit}]`
      if (array) return replace(array[0], array[1], list)
      if (lastValueEnd < 0) return replace(objectStart + 1, objectStart + 1, `\n${unit}"clients": ${list}\n`)
      return replace(lastValueEnd, lastValueEnd, `,\n${unit}"clients": ${list}`)
    }
    case 'remove': {
      const [start, end] = elements[edit.index] as [number, number]
      const previous = elements[edit.index - 1]
      const next = elements[edit.index + 1]
      if (previous) return replace(previous[1], end, '')
      if (next) return replace(start, next[0], '')
      return replace((array as [number, number])[0], (array as [number, number])[1], '[]')
    }
    case 'replace': {
      const [start, end] = elements[edit.index] as [number, number]
      return replace(start, end, serialize(edit.entry))
    }
  }
}

/** Applies `edit` to the file's `clients` (everything else kept as it was), validated, atomically. */
async function editClients(setup: Setup, edit: Edit): Promise<void> {
  const { path, text } = requireFile(setup)
  const raw = JSON.parse(text) as Record<string, unknown>
  const expected = Array.isArray(raw.clients) ? [...(raw.clients as unknown[])] : []
  if (edit.op === 'add') expected.push(edit.entry)
  else if (edit.op === 'remove') expected.splice(edit.index, 1)
  else expected[edit.index] = edit.entry
  let next = spliceClients(text, edit)
  let check: unknown
  try {
    check = (JSON.parse(next) as Record<string, unknown>).clients
  } catch {
    check = undefined
  }
  if (JSON.stringify(check) !== JSON.stringify(expected)) {
    // Not expected with a valid file; rewrite the whole file rather than risk it.
    raw.clients = expected
    next = `${JSON.stringify(raw, null, 2)}\n`
  }
  try {
    parseConfigFile(next, path)
  } catch (err) {
    throw new CliError(`the change would make ${(err as Error).message}`, 1)
  }
  const target = await realpath(path)
  const mode = (await stat(target)).mode & 0o777
  const temp = `${target}.${process.pid}.tmp`
  try {
    await writeFile(temp, next, { mode })
    await chmod(temp, mode)
    await rename(temp, target)
  } catch (err) {
    await unlink(temp).catch(() => {})
    throw new CliError(`cannot write ${path}: ${(err as Error).message}`, 1)
  }
}

/** The index of the client in the file's `clients`, or a failure naming the file. */
function fileClientIndex(setup: Setup, id: string): number {
  const { path, file } = requireFile(setup)
  const index = file.clients.findIndex((client) => client.clientId === id)
  if (index < 0) throw new CliError(`client "${id}" is not in ${path}`, 1)
  return index
}

// --- clients ----------------------------------------------------------------------------------------

/** Flags of `clients add` by registration field, to name them in validation errors. */
const FIELD_FLAGS: Record<string, string> = {
  clientId: '--id',
  clientSecret: '--secret',
  displayName: '--name',
  permissions: '--permission',
  redirectUris: '--redirect-uri',
  postLogoutRedirectUris: '--post-logout-redirect-uri',
  allowedNetworks: '--network',
}

function explainRegistrationError(err: Error, registration: Record<string, unknown>): string {
  const lines = err.message.split('\n').slice(1)
  const explained = lines.map((line) => {
    if (line.includes('public client cannot use client_credentials')) {
      return 'gt:client_credentials needs a secret: add --generate-secret or --secret S'
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

/** A file entry in the shape of the host API's ClientInfo (no hashes, no plain-text secrets). */
function fileClientInfo(client: ConfigFile['clients'][number]) {
  const secret = client.clientSecret
  return {
    clientId: client.clientId,
    displayName: client.displayName ?? client.clientId,
    type: secret === undefined ? 'public' : 'confidential',
    permissions: client.permissions,
    redirectUris: client.redirectUris,
    postLogoutRedirectUris: client.postLogoutRedirectUris,
    ...(client.allowedNetworks ? { allowedNetworks: client.allowedNetworks } : {}),
    secrets:
      secret === undefined
        ? []
        : isSecretHash(secret)
          ? [{ id: secretId({ hash: secret, createdAt: 0 }) }]
          : [{ plainText: true }],
  }
}

type SecretCell = { id?: string; expiresAt?: number; plainText?: boolean }

function secretsCell(secrets: SecretCell[]): string {
  if (secrets.length === 0) return '-'
  const now = nowSeconds()
  const expiry = (at: number) => ` (${at <= now ? 'expired' : 'expires'} ${iso(at)})`
  return secrets
    .map((s) =>
      s.plainText ? '(plain text in the file)' : `${s.id}${s.expiresAt !== undefined ? expiry(s.expiresAt) : ''}`,
    )
    .join(', ')
}

function hashIterations(setup: Setup): number | undefined {
  return setup.file?.secretHashIterations
}

const clientsAdd: Command = {
  name: 'clients add',
  summary: 'register a client',
  usage: `Usage: gatehouse clients add --id ID --permission P [--permission P]... [--secret S | --generate-secret]
                             [--name NAME] [--redirect-uri U]... [--post-logout-redirect-uri U]...
                             [--network CIDR]... [--json] [--config FILE]`,
  details: `Registers a client. An id that is already registered is skipped (nothing changes; exit 0).
A generated secret is printed once, on stdout: only its hash is stored.

Options:
  --id ID                          client id (required)
  --permission P                   ept:token, gt:client_credentials, scp:api1, ... (required, repeatable)
  --secret S                       the client's secret ("-": read it from stdin; prefer "-": a value here shows in ps and shell history)
  --generate-secret                generate a random 256-bit secret and print it
                                   (neither: a public client, which must use PKCE)
  --name NAME                      display name (default: the id)
  --redirect-uri U                 redirect URI for the code flow (repeatable)
  --post-logout-redirect-uri U     post-logout redirect URI (repeatable)
  --network CIDR                   only accept the client from this network (repeatable)
  --json                           print {created, client, secret?} as JSON

With the in-memory store the client (its secret hashed) is added to the configuration file.

Example:
  gatehouse clients add --id reporting-job --generate-secret \\
    --permission ept:token --permission gt:client_credentials --permission scp:api1`,
  options: {
    id: { type: 'string' },
    permission: { type: 'string', multiple: true },
    secret: { type: 'string' },
    'generate-secret': { type: 'boolean' },
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    network: { type: 'string', multiple: true },
    json: { type: 'boolean' },
  },
  positionals: [],
  async run(values) {
    const id = values.id as string | undefined
    const permissions = (values.permission as string[] | undefined) ?? []
    if (id === undefined) throw new CliError('--id is required', 2, this.usage)
    if (permissions.length === 0) throw new CliError('at least one --permission is required', 2, this.usage)
    if (values.secret !== undefined && values['generate-secret']) {
      throw new CliError('give --secret or --generate-secret, not both', 2, this.usage)
    }
    const generated = values['generate-secret'] ? generateSecret() : undefined
    const secret = generated ?? (await secretOption(values, this))
    const list = (name: string) => (values[name] as string[] | undefined) ?? []
    const registration = {
      clientId: id,
      ...(secret !== undefined ? { clientSecret: secret } : {}),
      ...(values.name !== undefined ? { displayName: values.name as string } : {}),
      permissions,
      ...(list('redirect-uri').length > 0 ? { redirectUris: list('redirect-uri') } : {}),
      ...(list('post-logout-redirect-uri').length > 0
        ? { postLogoutRedirectUris: list('post-logout-redirect-uri') }
        : {}),
      ...(list('network').length > 0 ? { allowedNetworks: list('network') } : {}),
    } satisfies ClientRegistration
    try {
      parseClientRegistration(registration)
    } catch (err) {
      throw new CliError(explainRegistrationError(err as Error, registration), 2, this.usage)
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

    if (config.store.type === 'memory') {
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

    return withService(config, async (service) => {
      const { created, client } = await service.clients.ensure(registration)
      if (created) progress(`Registered client "${id}" (${client.type})`)
      report(created, client)
      return 0
    })
  },
}

const clientsList: Command = {
  name: 'clients list',
  summary: 'list the registered clients',
  usage: 'Usage: gatehouse clients list [--json] [--config FILE]',
  details: `Lists the clients: id, type, name, permissions, and each secret's id and expiry (never the
secret). With the in-memory store, the configuration file's clients.

Options:
  --json   the clients as JSON (the host API's ClientInfo)`,
  options: { json: { type: 'boolean' } },
  positionals: [],
  async run(values) {
    const config = await setup(values)
    const clients =
      config.store.type === 'memory'
        ? requireFile(config).file.clients.map(fileClientInfo)
        : await withService(config, (service) => service.clients.list())
    clients.sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0))
    if (values.json) {
      json(clients)
      return 0
    }
    if (clients.length === 0) {
      progress('No clients.')
      return 0
    }
    out(
      table(
        ['ID', 'TYPE', 'NAME', 'PERMISSIONS', 'SECRETS'],
        clients.map((client) => [
          client.clientId,
          client.type,
          client.displayName,
          client.permissions.join(' '),
          secretsCell(client.secrets as SecretCell[]),
        ]),
      ),
    )
    return 0
  },
}

const clientsRemove: Command = {
  name: 'clients remove',
  summary: 'delete a client',
  usage: 'Usage: gatehouse clients remove ID [--config FILE]',
  details: `Deletes the client. Running servers forget it within 5 seconds (their client cache). With the
in-memory store, the client is removed from the configuration file.`,
  options: {},
  positionals: ['ID'],
  async run(values, [id = '']) {
    const config = await setup(values)
    if (config.store.type === 'memory') {
      const { path } = requireFile(config)
      await editClients(config, { op: 'remove', index: fileClientIndex(config, id) })
      progress(`Removed client "${id}" from ${path}; restart the server to apply it`)
      return 0
    }
    return withService(config, async (service) => {
      if (!(await service.clients.delete(id))) throw new CliError(`client "${id}" does not exist`, 1)
      progress(`Removed client "${id}"`)
      if (config.file?.clients.some((client) => client.clientId === id)) {
        progress(`Note: ${config.configPath} still lists "${id}": the server registers it again when it starts`)
      }
      return 0
    })
  },
}

const clientsRotateSecret: Command = {
  name: 'clients rotate-secret',
  summary: 'add a new secret; the others stop working after a grace period',
  usage: 'Usage: gatehouse clients rotate-secret ID [--grace SECONDS] [--secret S] [--json] [--config FILE]',
  details: `Adds a new secret to the client (generated and printed once on stdout, unless --secret is
given) and retires every other secret: they keep working for the grace period, then stop.
Deploy the new secret to the client within that time. Running servers see the change within 5 s.

Options:
  --grace SECONDS   how long the old secrets keep working (default 86400; 0: stop now)
  --secret S        the new secret, at least 16 characters ("-": read it from stdin; prefer it to a value in argv)
  --json            print {clientId, added, retired} as JSON

With the in-memory store the file's secret is replaced by the new one (hashed); a running server
keeps accepting the old one until it restarts with the file, so --grace does not apply. With
another store, a client the configuration file lists is refused: the file decides its secret.`,
  options: {
    grace: { type: 'string' },
    secret: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: ['ID'],
  async run(values, [id = '']) {
    const graceText = (values.grace as string | undefined) ?? '86400'
    if (!/^\d{1,10}$/.test(graceText)) {
      throw new CliError(`--grace must be a number of seconds, got ${JSON.stringify(graceText)}`, 2, this.usage)
    }
    const grace = Number(graceText)
    const given = await secretOption(values, this)
    if (given !== undefined && given.length < 16) {
      throw new CliError('--secret must be at least 16 characters', 2, this.usage)
    }
    const generated = given === undefined ? generateSecret() : undefined
    const config = await setup(values)
    const finish = (added: { id: string; createdAt: number }, retired: { id: string; expiresAt: number }[]) => {
      if (values.json) {
        json({ clientId: id, added: { ...added, ...(generated ? { secret: generated } : {}) }, retired })
      } else if (generated) {
        progress('The new secret, shown this once (only a hash is stored):')
        out(generated)
      }
      return 0
    }

    if (config.store.type === 'memory') {
      const { path, text, file } = requireFile(config)
      const index = fileClientIndex(config, id)
      if (file.clients[index]?.clientSecret === undefined) {
        throw new CliError(`client "${id}" is public: it has no secret to rotate`, 1)
      }
      const hash = await hashSecret(given ?? (generated as string), hashIterations(config))
      const entry = (JSON.parse(text) as { clients: Record<string, unknown>[] }).clients[index] as Record<
        string,
        unknown
      >
      await editClients(config, { op: 'replace', index, entry: { ...entry, clientSecret: hash } })
      const added = { id: secretId({ hash, createdAt: 0 }), createdAt: nowSeconds() }
      progress(`Replaced the secret of client "${id}" in ${path} (new secret ${added.id}).`)
      progress(
        `The in-memory store loads the file at start: a running server accepts the old secret until it restarts${
          values.grace !== undefined ? ' (--grace does not apply)' : ''
        }.`,
      )
      return finish(added, [])
    }

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
      const { secret: _secret, ...added } = await service.clients.addSecret(id, {
        secret: given ?? (generated as string),
      })
      progress(`Added secret ${added.id} to client "${id}"`)
      const at = nowSeconds() + grace
      const retired: { id: string; expiresAt: number }[] = []
      for (const old of client.secrets) {
        // Already expired, or expiring within the grace period anyway: nothing to do.
        if (old.expiresAt !== undefined && old.expiresAt <= at) continue
        await service.clients.retireSecret(id, old.id, { at })
        retired.push({ id: old.id, expiresAt: at })
        progress(`Retired secret ${old.id}: it stops working ${grace === 0 ? 'now' : `at ${iso(at)}`}`)
      }
      return finish(added, retired)
    })
  },
}

// --- keys ---------------------------------------------------------------------------------------------

function keyState(key: KeyInfo, now: number): string {
  if (key.expiresAt !== undefined && key.expiresAt <= now) return 'expired'
  if (key.retiresAt !== undefined && key.retiresAt <= now) return 'retired'
  if (key.activatesAt > now) return 'next'
  return 'signing'
}

function keyTable(keys: KeyInfo[]): string {
  const now = nowSeconds()
  return table(
    ['KID', 'ALG', 'STATE', 'SIGNS FROM', 'RETIRES', 'UNPUBLISHED'],
    keys.map((key) => [
      key.kid,
      key.alg,
      keyState(key, now),
      iso(key.activatesAt),
      key.retiresAt !== undefined ? iso(key.retiresAt) : '-',
      key.expiresAt !== undefined ? iso(key.expiresAt) : '-',
    ]),
  )
}

function requireKeyStore(config: Setup): void {
  if (config.store.type === 'memory') throw new CliError(MEMORY_KEYS, 1)
}

const keysList: Command = {
  name: 'keys list',
  summary: 'list the signing keys',
  usage: 'Usage: gatehouse keys list [--json] [--config FILE]',
  details: `Lists the signing keys (public metadata only): signing now, next (published, signing from a
later time), retired (still published for tokens they signed). A store without keys gets them now,
as a starting server would.

Options:
  --json   the keys as JSON (the host API's KeyInfo)`,
  options: { json: { type: 'boolean' } },
  positionals: [],
  async run(values) {
    const config = await setup(values)
    requireKeyStore(config)
    const keys = await withService(config, (service) => service.keys.list())
    keys.sort((a, b) => a.activatesAt - b.activatesAt || a.alg.localeCompare(b.alg) || a.kid.localeCompare(b.kid))
    if (values.json) json(keys)
    else out(keyTable(keys))
    return 0
  },
}

const keysRotate: Command = {
  name: 'keys rotate',
  summary: 'publish new signing keys; the current ones retire',
  usage: 'Usage: gatehouse keys rotate [--alg ALG]... [--json] [--config FILE]',
  details: `Publishes a new key per algorithm at once; it signs after keyPublishAhead seconds (default 300),
when the key it replaces retires (that one stays published while its tokens may be presented).

Options:
  --alg ALG   rotate only this algorithm (repeatable): ${SIGNING_ALGS.join(', ')}
              (default: every algorithm the service signs with)
  --json      the new keys as JSON`,
  options: { alg: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  positionals: [],
  async run(values) {
    const algorithms = (values.alg as string[] | undefined) ?? []
    for (const alg of algorithms) {
      if (!(SIGNING_ALGS as readonly string[]).includes(alg)) {
        throw new CliError(`--alg must be one of ${SIGNING_ALGS.join(', ')}, got ${JSON.stringify(alg)}`, 2, this.usage)
      }
    }
    const config = await setup(values)
    requireKeyStore(config)
    const keys = await withService(config, (service) =>
      service.keys.rotate(algorithms.length > 0 ? { algorithms: algorithms as SigningAlg[] } : {}),
    )
    const from = keys[0]?.activatesAt
    progress(`Published ${keys.length} new key(s)${from !== undefined ? `, signing from ${iso(from)}` : ''}`)
    if (values.json) json(keys)
    else out(keyTable(keys))
    return 0
  },
}

// --- serve --------------------------------------------------------------------------------------------

const serve: Command = {
  name: 'serve',
  summary: 'start the server (what npm start does)',
  usage: 'Usage: gatehouse serve [--config FILE]',
  details: `Starts the server on Node, exactly as npm start: the same flags, environment and output.

Environment:
  PORT     port to listen on (default 3000)
  HOST     address to listen on (default localhost)
  ISSUER   issuer identifier, used byte for byte (default http://localhost:PORT)
  LOG_FORMAT         text (default) or json: one JSON object per line
  METRICS            true: Prometheus metrics at /metrics (METRICS_PORT: on their own port)
  SHUTDOWN_TIMEOUT   seconds in-flight requests get on SIGTERM/Ctrl-C (default 10)
  GATEHOUSE_CONFIG, GATEHOUSE_STORE, DATABASE_URL, REDIS_URL, ...: as for the other commands

Serves /healthz, /readyz and a landing page at /; with the demo seed, try sign-in at /demo.
Without a configuration file, the demo client and user are seeded. SIGTERM or Ctrl-C stops it,
letting in-flight requests finish.`,
  options: {},
  positionals: [],
  async run(_values, _positionals, args) {
    // bin/serve_node.ts reads its flags from process.argv, as under `npm start`.
    process.argv = [process.argv[0] as string, process.argv[1] as string, ...args]
    await import('./serve_node.ts')
    return undefined // keeps running until a signal
  },
}

const migrate: Command = {
  name: 'migrate',
  summary: 'apply the SQL migrations (PostgreSQL, PGlite)',
  usage: 'Usage: gatehouse migrate [--config FILE]',
  details: `Applies the pending SQL migrations of the PostgreSQL or PGlite store (the server also runs them
when it starts). Safe to run from several instances at once; prints "up to date" when there is nothing
to apply.`,
  options: {},
  positionals: [],
  async run(values) {
    const config = await setup(values)
    try {
      out(await migrateStore(config.store))
    } catch (err) {
      throw new CliError((err as Error).message, 1)
    }
    return 0
  },
}

// --- dispatch ---------------------------------------------------------------------------------------

const COMMANDS: Command[] = [
  serve,
  migrate,
  clientsAdd,
  clientsList,
  clientsRemove,
  clientsRotateSecret,
  keysList,
  keysRotate,
]
const GROUPS = ['clients', 'keys']

function help(command: Command): string {
  return `${command.usage}\n\n${command.details}\n\n${COMMON}`
}

function groupUsage(group: string): string {
  const commands = COMMANDS.filter((command) => command.name.startsWith(`${group} `))
  const width = Math.max(...commands.map((command) => [command.name, ...command.positionals].join(' ').length)) + 2
  return `Usage: gatehouse ${group} <command> [options]\n\nCommands:\n${commands
    .map((command) => `  ${[command.name, ...command.positionals].join(' ').padEnd(width)}${command.summary}`)
    .join('\n')}\n\nRun "gatehouse ${group} <command> --help" for a command's options.`
}

/** The command named by the leading words of `words`, and how many words named it. */
function lookup(words: string[], usage: string): { command: Command; used: number } | { group: string } {
  const [first, second] = words
  if (first === undefined) throw new CliError('no command given', 2, usage)
  if (GROUPS.includes(first)) {
    if (second === undefined || second.startsWith('-')) return { group: first }
    const command = COMMANDS.find((candidate) => candidate.name === `${first} ${second}`)
    if (!command) throw new CliError(`unknown command "${first} ${second}"`, 2, groupUsage(first))
    return { command, used: 2 }
  }
  const command = COMMANDS.find((candidate) => candidate.name === first)
  if (!command) {
    throw new CliError(
      first.startsWith('-') ? `unknown option ${first.split('=')[0]}` : `unknown command "${first}"`,
      2,
      usage,
    )
  }
  return { command, used: 1 }
}

/** node:util parseArgs' messages, shortened to the point. */
function parseError(err: Error & { code?: string }): string {
  const unknown = /^Unknown option '([^']+)'/.exec(err.message)
  if (unknown) return `unknown option ${unknown[1]}`
  const unexpected = /^Unexpected argument '([^']+)'/.exec(err.message)
  if (unexpected) return `unexpected argument ${JSON.stringify(unexpected[1])}`
  const first = err.message.split(/\.(\s|$)/)[0] ?? err.message
  return first.charAt(0).toLowerCase() + first.slice(1)
}

async function execute(command: Command, args: string[]): Promise<number | undefined> {
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({
      args,
      options: { ...command.options, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    })
  } catch (err) {
    throw new CliError(parseError(err as Error), 2, command.usage)
  }
  const { values, positionals } = parsed
  if (values.help) {
    out(help(command))
    return 0
  }
  if (positionals.length < command.positionals.length) {
    throw new CliError(`missing ${command.positionals[positionals.length]}`, 2, command.usage)
  }
  if (positionals.length > command.positionals.length) {
    throw new CliError(
      `unexpected argument ${JSON.stringify(positionals[command.positionals.length])}`,
      2,
      command.usage,
    )
  }
  return command.run(values as Values, positionals, args)
}

/** The package's version: its package.json is one folder up from the sources, two from dist/bin. */
async function version(): Promise<string> {
  for (const path of ['../package.json', '../../package.json']) {
    const text = await readFile(new URL(path, import.meta.url), 'utf8').catch(() => undefined)
    const manifest = text === undefined ? undefined : (JSON.parse(text) as { name?: string; version: string })
    if (manifest?.name === 'gatehouse') return manifest.version
  }
  throw new Error('cannot find the package.json of gatehouse')
}

/** Runs the command line; resolves with the exit status, or undefined while a server runs. */
export async function main(argv: string[]): Promise<number | undefined> {
  const [first] = argv
  if (first === undefined) {
    progress(USAGE)
    return 2
  }
  if (first === '--help' || first === '-h') {
    out(USAGE)
    return 0
  }
  if (first === '--version') {
    out(await version())
    return 0
  }
  if (first === 'help') {
    const words = argv.slice(1)
    if (words.length === 0) {
      out(USAGE)
      return 0
    }
    const found = lookup(words, USAGE)
    if ('group' in found) {
      if (words.length > 1) throw new CliError(`unknown command "${words.join(' ')}"`, 2, groupUsage(found.group))
      out(groupUsage(found.group))
    } else {
      if (words.length > found.used) throw new CliError(`unknown command "${words.join(' ')}"`, 2, USAGE)
      out(help(found.command))
    }
    return 0
  }
  const found = lookup(argv, USAGE)
  if ('group' in found) {
    const rest = argv.slice(1)
    if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) {
      out(groupUsage(found.group))
      return 0
    }
    throw new CliError(
      rest.length === 0 ? `"${found.group}" needs a command` : `unknown option ${rest[0]}`,
      2,
      groupUsage(found.group),
    )
  }
  return execute(found.command, argv.slice(found.used))
}

/** main, with errors reported on stderr (no stack) and the process ended with its status. */
export async function run(argv: string[]): Promise<void> {
  let status: number | undefined
  try {
    status = await main(argv)
  } catch (err) {
    if (err instanceof CliError) {
      progress(`gatehouse: ${redact(err.message)}`)
      if (err.status === 2 && err.usage) progress(`\n${err.usage}`)
      status = err.status
    } else {
      progress(`gatehouse: ${redact(err instanceof Error ? err.message : String(err))}`)
      if (env('GATEHOUSE_DEBUG') && err instanceof Error && err.stack) progress(redact(err.stack))
      status = 1
    }
  }
  if (status === undefined) return
  process.exitCode = status
  // Everything is closed; a driver's stray timer must not hold the process.
  setTimeout(() => process.exit(status), 300).unref()
}
