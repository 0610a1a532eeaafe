/**
 * What the store commands start from, as `npm start` does: the configuration file (--config FILE or
 * GATEHOUSE_CONFIG) and the store it and the environment choose (bin/store.ts), and a token service
 * on that store for the host API. With the in-memory store the file is what the client commands edit.
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { type ConfigFile, type StoreConfig, parseConfigFile } from '../src/config/index.ts'
import { type TokenService, createTokenService } from '../src/index.ts'
import { CliError } from './args.ts'
import { progress } from './io.ts'
import { chooseStore, describeStore, openStore, sqliteFile } from './store.ts'

function env(name: string): string | undefined {
  return process.env[name]
}

export interface Setup {
  configPath: string | undefined
  configText: string | undefined
  file: ConfigFile | undefined
  store: StoreConfig
}

/** Reads the configuration file and chooses the store, as `npm start` does. */
export async function setup(values: { config: string | undefined }): Promise<Setup> {
  const flag = values.config
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

/**
 * Opens the store, runs `fn` with a token service on it, closes the store. Only `serve` and
 * `migrate` change a SQL schema: a store with migrations pending (a PGlite directory that does not
 * exist) is refused, naming the command that migrates it (#27 item 13).
 */
export async function withService<T>(setup: Setup, fn: (service: TokenService) => Promise<T>): Promise<T> {
  progress(`Using the ${describeStore(setup.store)}`)
  const missing =
    (setup.store.type === 'pglite' && !existsSync(setup.store.dataDir)) ||
    (setup.store.type === 'sqlite' && !existsSync(sqliteFile(setup.store.dataDir)))
  if (missing) {
    throw new CliError(
      `the ${describeStore(setup.store)} does not exist: run "gatehouse migrate" (or start the server, "gatehouse serve") with the same GATEHOUSE_DATA_DIR; nothing was created`,
      1,
    )
  }
  let store: Awaited<ReturnType<typeof openStore>>
  try {
    store = await openStore(setup.store, { migrate: false })
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

const PERSISTENT = 'a persistent store (GATEHOUSE_STORE=sqlite, GATEHOUSE_STORE=pglite, DATABASE_URL or REDIS_URL)'

// #40 item 5: why (another process cannot reach the running server's memory) and what to do.
const MEMORY_CLIENTS = `no store to add the client to: the in-memory store (no GATEHOUSE_STORE, DATABASE_URL or REDIS_URL)
keeps its clients inside the running server's process, which this command cannot reach.
To try a flow against "npm start" as it is, use its demo clients: demo-service (client credentials),
demo-web (sign-in), demo-cli (device flow) and demo-agent (token exchange); see the README.
To add your own: name the configuration file whose "clients" to edit with --config FILE (or GATEHOUSE_CONFIG)
and restart the server with it (a file replaces the demo clients and user), or use ${PERSISTENT}.`

const MEMORY_KEYS = `the in-memory store's signing keys live only inside a running server process
(generated when it starts, gone when it stops): there is nothing to list or rotate from here.
Use ${PERSISTENT} to manage keys from the command line.`

const MEMORY_GRANTS = `the in-memory store's grants live only inside a running server process: there is nothing
to list or revoke from here. Use the host API (service.grants) in that process, the grants page
(option grantsPage), or ${PERSISTENT}.`

/** Fails with the in-memory store: its grants exist only inside a running server. */
export function requireGrantStore(setup: Setup): void {
  if (setup.store.type === 'memory') throw new CliError(MEMORY_GRANTS, 1)
}

/** The configuration file the in-memory mode edits. */
export function requireFile(setup: Setup): { path: string; text: string; file: ConfigFile } {
  if (setup.configPath === undefined || setup.configText === undefined || !setup.file) {
    throw new CliError(MEMORY_CLIENTS, 1)
  }
  return { path: setup.configPath, text: setup.configText, file: setup.file }
}

/** Fails with the in-memory store: its keys exist only inside a running server. */
export function requireKeyStore(setup: Setup): void {
  if (setup.store.type === 'memory') throw new CliError(MEMORY_KEYS, 1)
}

/** The server's PBKDF2 iterations, for secrets hashed into the file. */
export function hashIterations(setup: Setup): number | undefined {
  const iterations = setup.file?.secretHashIterations
  const max = setup.file?.secretHashMaxIterations
  return iterations !== undefined && max !== undefined ? Math.min(iterations, max) : iterations
}
