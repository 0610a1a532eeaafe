/**
 * @module config/file
 * The JSON configuration file of `npm start` (`--config FILE` or `GATEHOUSE_CONFIG`): clients to
 * register (plain-text secrets, hashed on load), built-in users, extra scopes and service settings.
 */
import * as v from 'valibot'
import { ClientRegistrationSchema } from '../clients/index.ts'
import { OptionsSchema, ScopeSchema, UserSchema, clientIdMetadataDocumentSettings } from './schema.ts'
import { throttleSettings } from './throttle.ts'
import { IDENTITY_ASSERTION_TRUST_FILE_ENTRIES } from './identity_assertion.ts'
import { identityAssertionIdpFileEntries } from './identity_assertion_audiences.ts'
import { formatIssues, strictObject } from '../schema_issues.ts'

const settings = OptionsSchema.entries

/** A Redis node or sentinel, `host:port` (a host name, IPv4, or bracketed IPv6). */
const HostPortSchema = v.pipe(v.string(), v.regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be "host:port"'))

/** Which store `npm start` uses (the environment may override it, see `bin/store.ts`). */
export const StoreConfigSchema = v.variant('type', [
  strictObject({ type: v.literal('memory') }),
  strictObject({
    type: v.literal('postgres'),
    url: v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')),
    schema: v.optional(v.pipe(v.string(), v.regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier'))),
  }),
  // One node (`url`), a Redis Cluster (`cluster`: its seed nodes, #43) or a Sentinel-managed primary
  // (`sentinel`: the sentinels and the master name, #43), exactly one of the three.
  v.pipe(
    strictObject({
      type: v.literal('redis'),
      url: v.optional(v.pipe(v.string(), v.regex(/^rediss?:\/\//, 'must be a redis:// URL'))),
      cluster: v.optional(v.pipe(v.array(HostPortSchema), v.minLength(1, 'must name at least one seed node'))),
      sentinel: v.optional(
        strictObject({
          nodes: v.pipe(v.array(HostPortSchema), v.minLength(1, 'must name at least one sentinel')),
          name: v.pipe(v.string(), v.trim(), v.minLength(1, 'must be the master name the sentinels monitor')),
          /** The data nodes' password (`requirepass`), and the sentinels' own. */
          password: v.optional(v.pipe(v.string(), v.minLength(1))),
          sentinelPassword: v.optional(v.pipe(v.string(), v.minLength(1))),
        }),
      ),
      prefix: v.optional(v.pipe(v.string(), v.minLength(1))),
      // Replicas that must acknowledge the writes that must survive a failover (#43 item 4).
      waitReplicas: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(16))),
      waitTimeout: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
    }),
    v.check(
      (store) => [store.url, store.cluster, store.sentinel].filter((form) => form !== undefined).length === 1,
      'give exactly one of url, cluster and sentinel',
    ),
  ),
  strictObject({ type: v.literal('pglite'), dataDir: v.pipe(v.string(), v.minLength(1)) }),
  // #28: the file gatehouse.db in dataDir (gatehouse-oidc/storage/sqlite: Node ≥ 22.5, Bun or Deno).
  // #44 item 3: `synchronous`, what a commit waits for (default full: survives a power loss).
  strictObject({
    type: v.literal('sqlite'),
    dataDir: v.pipe(v.string(), v.minLength(1)),
    synchronous: v.optional(v.picklist(['full', 'normal'], 'must be "full" or "normal"')),
  }),
])
export type StoreConfig = v.InferOutput<typeof StoreConfigSchema>

/** The configuration file's schema. */
export const ConfigFileSchema = strictObject({
  $schema: v.optional(v.string()),
  issuer: v.optional(settings.issuer),
  store: v.optional(StoreConfigSchema),
  clients: v.optional(v.array(ClientRegistrationSchema), []),
  /** Delete stored clients the file does not list (default false: they may come from the API or CLI). */
  pruneClients: v.optional(v.boolean(), false),
  users: v.optional(v.array(UserSchema), []),
  scopes: v.optional(v.array(ScopeSchema), []),
  accessTokenTtl: settings.accessTokenTtl,
  authorizationCodeTtl: settings.authorizationCodeTtl,
  idTokenTtl: settings.idTokenTtl,
  refreshTokenTtl: settings.refreshTokenTtl,
  refreshTokenFamilyTtl: settings.refreshTokenFamilyTtl,
  sessionTtl: settings.sessionTtl,
  interactionTtl: settings.interactionTtl,
  deviceCodeTtl: settings.deviceCodeTtl,
  deviceCodeInterval: settings.deviceCodeInterval,
  cibaTtl: settings.cibaTtl,
  cibaInterval: settings.cibaInterval,
  accessTokenSigningAlg: settings.accessTokenSigningAlg,
  idTokenSigningAlg: settings.idTokenSigningAlg,
  keyRotationInterval: settings.keyRotationInterval,
  keyPublishAhead: settings.keyPublishAhead,
  requireOfflineAccess: settings.requireOfflineAccess,
  idTokenClaims: settings.idTokenClaims,
  idTokenIncludesClaims: settings.idTokenIncludesClaims,
  secretHashIterations: settings.secretHashIterations,
  secretHashMaxIterations: settings.secretHashMaxIterations,
  limits: settings.limits,
  theme: settings.theme,
  dynamicClientRegistration: settings.dynamicClientRegistration,
  throttle: v.optional(v.union([v.literal(false), strictObject(throttleSettings)]), {}),
  clientIdMetadataDocuments: v.optional(strictObject(clientIdMetadataDocumentSettings)),
  // #21: pushed authorization requests, DPoP and the FAPI 2.0 profile
  requirePushedAuthorizationRequests: settings.requirePushedAuthorizationRequests,
  parTtl: settings.parTtl,
  dpop: settings.dpop,
  profile: settings.profile,
  // #41: rich authorization requests (RFC 9396)
  authorizationDetailsTypes: settings.authorizationDetailsTypes,
  // #41: where CIBA requests are POSTed for the host to reach the end-user (no hook in a file).
  // #42: the end-user's grants page
  grantsPage: settings.grantsPage,
  ciba: v.optional(strictObject({ notifyUrl: v.optional(v.pipe(v.string(), v.url('must be an absolute URL'))) })),
  // #45: trusted identity providers (jwt-bearer grant) and the ID-JAG audiences and lifetime (no hooks in a file).
  identityAssertion: v.optional(
    strictObject({ ...IDENTITY_ASSERTION_TRUST_FILE_ENTRIES, ...identityAssertionIdpFileEntries }),
  ),
})
export type ConfigFile = v.InferOutput<typeof ConfigFileSchema>

/** Parses the file's text; throws a TypeError naming the file and every bad field. */
export function parseConfigFile(text: string, source = 'configuration file'): ConfigFile {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new TypeError(`${source}: not valid JSON (${(err as Error).message})`)
  }
  const result = v.safeParse(ConfigFileSchema, json)
  if (!result.success) throw new TypeError(`${source}: invalid configuration\n${formatIssues(result.issues)}`)
  const ids = new Set<string>()
  for (const client of result.output.clients) {
    if (ids.has(client.clientId))
      throw new TypeError(
        `${source}: invalid configuration\nclients: clientId ${JSON.stringify(client.clientId)} appears twice`,
      )
    ids.add(client.clientId)
  }
  return result.output
}
