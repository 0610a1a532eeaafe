/**
 * @module service/create_context
 * Builds the service's Context from validated options: the store, the audit events, the built-in
 * users, the client registry (with client ID metadata documents), the keyring, the caches and the
 * throttling. `createTokenService` (index.ts) serves it through the handler and the host API.
 */
import {
  type ClientRegistry,
  createClientKeySource,
  createClientRegistry,
  createMetadataDocumentResolver,
  type MetadataDocumentResolver,
} from '../clients/index.ts'
import { type Config, createScopeRegistry, type ScopeRegistry } from '../config/index.ts'
import { createEmitter, type Emitter, type Logger, metricsObserver } from '../events/index.ts'
import { type Context, endpointUrls } from '../context.ts'
import { createDpopNonces, dpopNonceSecret } from '../dpop/index.ts'
import { sha256, signingAlgorithms } from '../crypto/index.ts'
import { type Keyring, createKeyring } from '../keys/index.ts'
import {
  createExclusiveRunner,
  createRulesCache,
  createVerificationCache,
  type Limiter,
  type OutboundFetch,
  storeLimiter,
} from '../security/index.ts'
import { createIssuedRecords, createMemoryStore, isMemoryStore, type Store } from '../storage/index.ts'
import { createVerifiedTokenCache } from '../tokens/index.ts'
import { createUserDirectory } from '../accounts/index.ts'

const consoleLogger: Logger = {
  warn: (message, detail) => console.warn(`[gatehouse] ${message}`, detail ?? ''),
  error: (message, detail) => console.error(`[gatehouse] ${message}`, detail ?? ''),
}

/** PBKDF2 iterations of new client secrets and user passwords, and the most a stored digest may ask for. */
interface Hashing {
  iterations: number
  maxIterations?: number
}

/** The context of a token service: every part built once from the validated options. */
export function createServiceContext(config: Config): Context {
  const now = config.now ?? (() => Math.floor(Date.now() / 1000))
  const store = config.store ?? createMemoryStore({ now })
  const logger = config.logger ?? consoleLogger
  const emit = createEmitter(
    config.onEvent,
    logger,
    now,
    config.metrics ? metricsObserver(config.metrics) : undefined,
    config.waitUntil,
  )
  const hashing: Hashing = {
    iterations: config.secretHashIterations,
    ...(config.secretHashMaxIterations !== undefined ? { maxIterations: config.secretHashMaxIterations } : {}),
  }
  const users = createUserDirectory(config.users, hashing, logger)
  const limiter = config.throttle === false ? undefined : (config.throttle.limiter ?? storeLimiter(store))
  const scopes = createScopeRegistry(config.scopes, config.issuer)
  const clients = clientRegistry(config, store, now, hashing, scopes, limiter)
  const keyring = serviceKeyring(config, store, now, emit)
  return {
    config,
    store,
    // The memory store's reads are in process already: it keeps no second copy (#44).
    issued: createIssuedRecords(isMemoryStore(store) ? 0 : config.issuedRecordCache),
    keyring,
    clients,
    scopes,
    users,
    accounts: config.accounts ?? users,
    secretCache: createVerificationCache({
      ttl: config.secretCacheTtl,
      max: 10_000,
      now,
      ...(config.secretDigest ? { digest: config.secretDigest } : {}),
      ...(hashing.maxIterations !== undefined ? { maxIterations: hashing.maxIterations } : {}),
    }),
    sha256: config.sha256 ?? sha256,
    verifiedTokens: createVerifiedTokenCache({ max: 10_000 }),
    urls: endpointUrls(config.issuer),
    logger,
    now,
    secureCookies: config.issuer.startsWith('https:'),
    ...(config.throttle === false
      ? {}
      : {
          throttle: {
            limiter: limiter ?? storeLimiter(store),
            clientRules: createRulesCache('client', config.throttle.clientAuthentication, config.throttle.window),
            userRules: createRulesCache('user', config.throttle.signIn, config.throttle.window),
            exclusive: createExclusiveRunner(),
          },
        }),
    emit,
    clientKeys: createClientKeySource({
      now,
      ...outbound(config),
      ...(limiter && config.throttle !== false ? { limiter, window: config.throttle.window } : {}),
    }),
    dpopNonces: createDpopNonces({ secret: dpopNonceSecret(keyring, now), now }),
  }
}

/** How self-registered clients' server-side fetches go out (src/security/outbound.ts). */
function outbound(config: Config): {
  resolveHost?: (hostname: string) => Promise<string[]>
  outboundFetch?: OutboundFetch
  allowUnpinnedHostNames: boolean
} {
  return {
    ...(config.resolveHost ? { resolveHost: config.resolveHost } : {}),
    ...(config.outboundFetch ? { outboundFetch: config.outboundFetch } : {}),
    allowUnpinnedHostNames: config.allowUnpinnedHostNames,
  }
}

/** The client registry, with the resolver of client ID metadata documents when configured. */
function clientRegistry(
  config: Config,
  store: Store,
  now: () => number,
  hashing: Hashing,
  scopes: ScopeRegistry,
  limiter: Limiter | undefined,
): ClientRegistry {
  return createClientRegistry({
    store,
    now,
    iterations: config.secretHashIterations,
    ...(hashing.maxIterations !== undefined ? { maxIterations: hashing.maxIterations } : {}),
    algorithms: signingAlgorithms(config),
    ...(config.waitUntil ? { waitUntil: config.waitUntil } : {}),
    ...(typeof config.dynamicClientRegistration?.pruneUnusedAfter === 'number'
      ? { pruneUnusedAfter: config.dynamicClientRegistration.pruneUnusedAfter }
      : {}),
    ...(config.clientIdMetadataDocuments
      ? { documents: metadataDocuments(config.clientIdMetadataDocuments, config, scopes, now, limiter) }
      : {}),
  })
}

/** The keyring of the service's signing keys; a rotation is a `key.rotated` event. */
function serviceKeyring(config: Config, store: Store, now: () => number, emit: Emitter): Keyring {
  return createKeyring({
    store,
    now,
    algorithms: signingAlgorithms(config),
    ...(config.keys ? { configured: config.keys.keys } : {}),
    ...(config.keyRotationInterval !== undefined ? { rotationInterval: config.keyRotationInterval } : {}),
    publishAhead: config.keyPublishAhead,
    // A retired key stays published while tokens it signed may still be presented.
    retainFor: Math.max(config.accessTokenTtl, config.idTokenTtl) + 3600,
    ...(config.signer ? { signer: config.signer } : {}),
    onRotated: (created) =>
      emit(undefined, {
        type: 'key.rotated',
        kids: created.map((key) => key.kid),
        algorithms: created.map((key) => key.alg),
      }),
  })
}

/** The resolver of the `clientIdMetadataDocuments` option; every scope it names must be known. */
function metadataDocuments(
  settings: NonNullable<Config['clientIdMetadataDocuments']>,
  config: Config,
  scopes: ScopeRegistry,
  now: () => number,
  limiter: Limiter | undefined,
): MetadataDocumentResolver {
  for (const scope of settings.scopes) {
    if (!scopes.get(scope)) {
      throw new TypeError(
        `invalid token service options\nclientIdMetadataDocuments.scopes: ${JSON.stringify(scope)} is not a known scope`,
      )
    }
  }
  return createMetadataDocumentResolver({
    scopes: settings.scopes,
    ...(config.authorizationDetailsTypes ? { authorizationDetailsTypes: config.authorizationDetailsTypes } : {}),
    allowPrivateNetworks: settings.allowPrivateNetworks,
    timeout: settings.timeout,
    limits: settings.fetchLimits,
    redirectSchemes: settings.redirectSchemes,
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
    ...outbound(config),
    now,
    ...(limiter && config.throttle !== false ? { limiter, window: config.throttle.window } : {}),
  })
}
