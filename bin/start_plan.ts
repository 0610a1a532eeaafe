/**
 * What `npm start` makes of its configuration file (or, without one, of the demo seed) and ISSUER:
 * the issuer, clients, users, settings and theme of the service. Shared by bin/start.ts and the
 * Worker of `npm run start:workers` (bin/serve_workers_entry.ts), so both serve the same service.
 */
import { isLoopback } from '../src/security/index.ts'
import type { ConfigFile, StoreConfig } from '../src/config/index.ts'
import type { Theme } from '../src/index.ts'
import type { Runtime } from './runtime.ts'
import { DEMO, demoClients } from './seed.ts'
import { PATHS } from './start_app.ts'

export interface Plan {
  issuer: string
  users: NonNullable<ConfigFile['users']>
  storeConfig: StoreConfig | undefined
  pruneClients: boolean
  settings: Partial<Omit<ConfigFile, 'clients' | 'users' | '$schema' | 'issuer' | 'store' | 'pruneClients'>>
  seed: boolean
  demoCallback: string | undefined
  clients: NonNullable<ConfigFile['clients']>
  theme: Theme
}

/** What the file (or, without one, the demo seed when `seed`) and ISSUER make of the service. */
export function plan(runtime: Pick<Runtime, 'env'>, file: ConfigFile | undefined, port: number, seed: boolean): Plan {
  const issuer = runtime.env('ISSUER') ?? file?.issuer ?? `http://localhost:${port}`
  const {
    clients: fileClients,
    users = seed ? DEMO.users : [],
    $schema: _schema,
    issuer: _issuer,
    store: storeConfig,
    pruneClients = false,
    ...settings
  } = file ?? {}
  // With the demo seed, the demo client's callback on this server is a redirect URI of demo-web
  // (only where a redirect URI may be: https, or http on a loopback host).
  const issuerUrl = new URL(issuer)
  const demoCallback =
    seed && (issuerUrl.protocol === 'https:' || isLoopback(issuerUrl.hostname))
      ? `${issuerUrl.origin}${PATHS.demo}/callback`
      : undefined
  const clients = fileClients ?? (seed ? demoClients(demoCallback) : [])
  const theme = 'theme' in settings ? (settings.theme ?? {}) : {}
  return { issuer, users, storeConfig, pruneClients, settings, seed, demoCallback, clients, theme }
}
