/**
 * The clients and users the standalone server starts with: the configuration file's clients,
 * synced into the store (the file is their source of truth), or without a file the demo seed (a
 * client-credentials client, a web client and a user), filled in where missing.
 */
import type { ConfigFile } from '../src/config/index.ts'
import type { TokenService } from '../src/index.ts'
import type { Log } from './log.ts'

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
        'scp:address',
        'scp:phone',
        'scp:api1',
      ],
      redirectUris: ['http://localhost:8080/callback'],
      postLogoutRedirectUris: ['http://localhost:8080/'],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    },
    {
      // #40 item 5: a CLI or agent without a browser signs alice in with the device flow (RFC 8628).
      clientId: 'demo-cli',
      displayName: 'Demo CLI (device flow)',
      permissions: [
        'ept:device_authorization',
        'ept:token',
        'ept:revocation',
        'gt:urn:ietf:params:oauth:grant-type:device_code',
        'gt:refresh_token',
        'scp:openid',
        'scp:offline_access',
        'scp:api1',
      ],
      redirectUris: [],
      postLogoutRedirectUris: [],
      consentType: 'implicit',
      allowPlainPkce: false,
      requirePkce: false,
      lifetimes: {},
    },
    {
      // #40 item 5: an agent that exchanges a user's token for one naming it as actor (RFC 8693).
      clientId: 'demo-agent',
      clientSecret: 'demo-agent-secret',
      displayName: 'Demo agent (token exchange)',
      permissions: ['ept:token', 'gt:urn:ietf:params:oauth:grant-type:token-exchange', 'scp:api1'],
      redirectUris: [],
      postLogoutRedirectUris: [],
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

/** The ids of the demo clients, whose secrets the README prints. */
export const DEMO_CLIENT_IDS: readonly string[] = DEMO.clients.map((client) => client.clientId)

/** `a, b and c`. */
function listed(ids: readonly string[]): string {
  return ids.length < 2 ? ids.join('') : `${ids.slice(0, -1).join(', ')} and ${ids.at(-1)}`
}

/**
 * Whether a stored client is one the demo seed wrote (its id and display name): on a persistent
 * store it outlives the start that seeded it, with a secret anyone can read in the README.
 */
export function isDemoClient(client: { clientId: string; displayName: string }): boolean {
  return DEMO.clients.some((demo) => demo.clientId === client.clientId && demo.displayName === client.displayName)
}

/** The demo client whose redirect URIs get the demo callback. */
export const DEMO_CLIENT = 'demo-web'
export const DEMO_CLIENT_SECRET = 'demo-web-secret'

/**
 * Seeds the demo clients where missing. A demo-web stored by an earlier start (a persistent store)
 * gets the demo callback added to its redirect URIs when it lacks it.
 */
export async function seedDemo(
  service: TokenService,
  clients: ConfigFile['clients'],
  demoCallback: string | undefined,
): Promise<void> {
  const results = await Promise.all(clients.map((client) => service.clients.ensure(client)))
  for (const { created, client } of results) {
    if (created || client.clientId !== DEMO_CLIENT || !demoCallback) continue
    if (!client.redirectUris.includes(demoCallback)) {
      await service.clients.update(DEMO_CLIENT, { redirectUris: [...client.redirectUris, demoCallback] })
    }
  }
}

/** The demo clients, demo-web with the demo client's callback on this server when there is one. */
export function demoClients(demoCallback: string | undefined): ConfigFile['clients'] {
  return DEMO.clients.map((client) =>
    client.clientId === DEMO_CLIENT && demoCallback
      ? { ...client, redirectUris: [...client.redirectUris, demoCallback] }
      : client,
  )
}

/**
 * Makes the store's clients what the configuration file lists: each is created, updated or left
 * unchanged; with `prune`, stored clients the file does not list are deleted. One line per client.
 * A demo client an earlier start without a file seeded (its secret is public) is deleted unless
 * the file lists it (#27 item 13): a configured server never accepts the README's secrets.
 */
export async function syncClients(
  service: TokenService,
  clients: ConfigFile['clients'],
  prune: boolean,
  /** The configuration file, named with the client in a registration the service refuses (#40 item 6). */
  source = 'the configuration file',
): Promise<string[]> {
  const results = await Promise.all(
    clients.map((client) =>
      service.clients.sync(client).catch((err: Error) => {
        const reason = err.message.replace(/^invalid client registration\n/, '')
        throw new Error(`${source}: client ${client.clientId} cannot be loaded: ${reason}`, { cause: err })
      }),
    ),
  )
  const lines = results.map(({ status, client }) => `client ${client.clientId}: ${status}`)
  const listed = new Set(clients.map((client) => client.clientId))
  for (const stored of await service.clients.list()) {
    // Clients that registered themselves (RFC 7591) are not the file's: never listed, never pruned.
    if (listed.has(stored.clientId) || stored.registration !== undefined) continue
    if (isDemoClient(stored)) {
      await service.clients.delete(stored.clientId)
      lines.push(
        `client ${stored.clientId}: removed (a demo client seeded by an earlier start without --config; its secret is published)`,
      )
    } else if (prune) {
      await service.clients.delete(stored.clientId)
      lines.push(`client ${stored.clientId}: removed (not in the configuration file; pruneClients is true)`)
    } else {
      lines.push(`client ${stored.clientId}: kept (not in the configuration file; set "pruneClients": true to remove)`)
    }
  }
  return lines
}

/**
 * Without a file on a persistent store, what the log says about its clients: the demo seed's
 * warning, or how to add clients when there are none, or that demo clients from an earlier
 * `--demo` start are still there (#27 item 13). Also said by `start:workers` on a local D1 (#28).
 */
export async function describeClients(
  service: TokenService,
  log: Pick<Log, 'info' | 'warn'>,
  seeded: boolean,
  where: string,
  /** Whether `gatehouse clients add` reaches this store (not a local D1 inside workerd). */
  cli = true,
): Promise<void> {
  if (seeded) {
    log.warn(
      `--demo: the demo clients ${listed(DEMO_CLIENT_IDS)} are in the ${where}, with the secrets the README prints; they stay there. For trying it out only: ${cli ? 'remove them with "gatehouse clients remove ID", or ' : ''}start with --config FILE (which removes them)`,
    )
    return
  }
  const stored = (await service.clients.list()).filter((client) => client.registration === undefined)
  const demo = stored.filter(isDemoClient).map((client) => client.clientId)
  if (demo.length > 0) {
    log.warn(
      `demo clients ${listed(demo)} (secrets published in the README) are in the ${where} from an earlier --demo start: ${cli ? 'remove them with "gatehouse clients remove ID", or ' : ''}start with --config FILE (which removes them)`,
    )
  }
  if (stored.length === 0) {
    log.warn(
      `No clients configured: nothing can get a token yet. Add clients with --config FILE (its "clients"), ${cli ? 'or "gatehouse clients add" (same store variables), ' : ''}or try it out with --demo (seeds the demo clients of the README into the ${where})`,
    )
  } else {
    // #40 item 6: the users are options of the start, not records of the store.
    log.info(
      `No --config: serving the ${stored.length === 1 ? '1 client' : `${stored.length} clients`} in the ${where}, and no users: users are options of a start, not stored, so the demo user alice exists only in a --demo start (start with --demo again, or --config FILE with "users")`,
    )
  }
}
