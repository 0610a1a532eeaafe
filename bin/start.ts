/**
 * The runtime-neutral part of `npm start`: reads flags and environment, loads the configuration
 * file (or seeds the demo client and user), builds the service and hands it to a runtime's server.
 *
 * Flags: --config FILE (or GATEHOUSE_CONFIG). Environment: PORT (3000), HOST (localhost),
 * ISSUER (http://localhost:PORT, used byte for byte); the store as `bin/store.ts` says.
 */
import { type TokenService, type TokenServiceOptions, createTokenService } from '../src/index.ts'
import { type ConfigFile, type StoreConfig, parseConfigFile } from '../src/config_file.ts'
import type { Store } from '../src/storage/types.ts'
import { chooseStore, describeStore, openStore } from './store.ts'

export interface Runtime {
  name: string
  args: string[]
  env: (name: string) => string | undefined
  readTextFile: (path: string) => Promise<string>
  /** Starts listening; resolves once the server accepts connections. */
  serve: (
    handler: (request: Request, info?: { address?: string }) => Promise<Response>,
    options: { port: number; hostname: string },
  ) => Promise<{ close(): Promise<void> }>
  onSignal: (signal: 'SIGTERM' | 'SIGINT', listener: () => void) => void
  /** Runtime-specific service options (e.g. Node's synchronous secret digest and signer). */
  serviceOptions?: Pick<TokenServiceOptions, 'secretDigest' | 'signer' | 'sha256'>
  exit: (code: number) => never
}

/** The demo configuration used when no file is given. */
export const DEMO: Pick<ConfigFile, 'clients' | 'users'> = {
  clients: [
    {
      clientId: 'demo-service',
      clientSecret: 'demo-service-secret',
      displayName: 'Demo service (client credentials)',
      permissions: ['ept:token', 'ept:introspection', 'ept:revocation', 'gt:client_credentials', 'scp:api1'],
      redirectUris: [],
      postLogoutRedirectUris: [],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    },
    {
      clientId: 'demo-web',
      clientSecret: 'demo-web-secret',
      displayName: 'Demo web app',
      permissions: [
        'ept:authorization',
        'ept:token',
        'ept:logout',
        'ept:revocation',
        'ept:introspection',
        'gt:authorization_code',
        'gt:refresh_token',
        'rst:code',
        'scp:openid',
        'scp:profile',
        'scp:email',
        'scp:api1',
      ],
      redirectUris: ['http://localhost:8080/callback'],
      postLogoutRedirectUris: ['http://localhost:8080/'],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    },
  ],
  users: [
    {
      sub: 'demo-user-1',
      username: 'alice',
      password: 'alice-password',
      email: 'alice@example.com',
      email_verified: true,
      given_name: 'Alice',
      family_name: 'Example',
    },
  ],
}

function flag(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === name) return args[i + 1]
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1)
  }
  return undefined
}

/**
 * Makes the store's clients what the configuration file lists: each is created, updated or left
 * unchanged; with `prune`, stored clients the file does not list are deleted. One line per client.
 */
export async function syncClients(
  service: TokenService,
  clients: ConfigFile['clients'],
  prune: boolean,
): Promise<string[]> {
  const results = await Promise.all(clients.map((client) => service.clients.sync(client)))
  const lines = results.map(({ status, client }) => `client ${client.clientId}: ${status}`)
  const listed = new Set(clients.map((client) => client.clientId))
  for (const stored of await service.clients.list()) {
    if (listed.has(stored.clientId)) continue
    if (prune) {
      await service.clients.delete(stored.clientId)
      lines.push(`client ${stored.clientId}: removed (not in the configuration file; pruneClients is true)`)
    } else {
      lines.push(`client ${stored.clientId}: kept (not in the configuration file; set "pruneClients": true to remove)`)
    }
  }
  return lines
}

/** Starts the service on a runtime. Exits with status 1 and a clear message on bad configuration. */
export async function start(runtime: Runtime): Promise<TokenService> {
  const fail = (message: string): never => {
    console.error(`gatehouse: ${message}`)
    return runtime.exit(1)
  }
  const args = runtime.args
  if (args.includes('--config') && flag(args, '--config') === undefined) fail('--config needs a file path')
  const configPath = flag(args, '--config') ?? runtime.env('GATEHOUSE_CONFIG')
  const portText = runtime.env('PORT') ?? '3000'
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535)
    fail(`PORT must be a port number, got ${JSON.stringify(portText)}`)
  const port = Number(portText)
  const hostname = runtime.env('HOST') ?? 'localhost'

  let file: ConfigFile | undefined
  if (configPath !== undefined) {
    let text = ''
    try {
      text = await runtime.readTextFile(configPath)
    } catch (err) {
      fail(`cannot read configuration file ${configPath}: ${(err as Error).message}`)
    }
    try {
      file = parseConfigFile(text, configPath)
    } catch (err) {
      fail((err as Error).message)
    }
  }
  const issuer = runtime.env('ISSUER') ?? file?.issuer ?? `http://localhost:${port}`
  const {
    clients = DEMO.clients,
    users = DEMO.users,
    $schema: _schema,
    issuer: _issuer,
    store: storeConfig,
    pruneClients = false,
    ...settings
  } = file ?? {}
  let chosen: StoreConfig
  let store: Store | undefined
  try {
    chosen = chooseStore(runtime.env, storeConfig)
    store = await openStore(chosen)
  } catch (err) {
    return fail((err as Error).message)
  }
  let service: TokenService
  try {
    // Requests come from the runtime's HTTP server, which holds bodies to their Content-Length.
    const limits = { ...('limits' in settings ? settings.limits : {}), trustContentLength: true }
    service = createTokenService({
      ...settings,
      ...runtime.serviceOptions,
      limits,
      issuer,
      users,
      ...(store ? { store } : {}),
    })
  } catch (err) {
    await store?.close?.()
    return fail((err as Error).message)
  }
  try {
    // The file is the source of truth for the clients it lists (the demo seed only fills gaps).
    const lines = file ? await syncClients(service, clients, pruneClients) : []
    if (!file) await Promise.all(clients.map((client) => service.clients.ensure(client)))
    await service.ready()
    for (const line of lines) console.log(line)
  } catch (err) {
    return fail((err as Error).message)
  }
  const server = await runtime.serve(service.fetch, { port, hostname })
  console.log(
    `Gatehouse (${runtime.name}) listening on http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}, issuer ${issuer}, ${describeStore(chosen)}`,
  )
  if (!file) {
    console.log('No --config given: seeded the demo client "demo-service" and the demo user "alice". Get a token with:')
    console.log(
      `  curl -s -u demo-service:demo-service-secret -d grant_type=client_credentials -d scope=api1 ${service.endpoints.token}`,
    )
  }
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    server
      .close()
      .then(() => service.close())
      .finally(() => runtime.exit(0))
  }
  runtime.onSignal('SIGTERM', stop)
  runtime.onSignal('SIGINT', stop)
  return service
}
