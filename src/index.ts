/**
 * @module gatehouse
 * An OAuth 2.0 and OpenID Connect token service as one Web-standard fetch handler.
 */
import type { ClientRegistry } from './clients/index.ts'
import {
  type InteractionResult,
  parseOptions,
  type PendingInteraction,
  type TokenServiceOptions,
} from './config/index.ts'
import { createHandler } from './handler.ts'
import {
  type CibaDecisionInput,
  type CibaDecisionOutcome,
  completeHostInteraction,
  decideCiba,
  pendingInteraction,
} from './interaction/index.ts'
export type { CibaDecisionInput, CibaDecisionOutcome } from './interaction/index.ts'
import { endRequestSession, endSubjectSessions } from './endpoints/index.ts'
import type { KeyRecord, Store } from './storage/index.ts'
import type { SigningAlgorithm } from './crypto/index.ts'
import { bindRequest, canonicalAddress } from './security/index.ts'
import { createServiceContext, type HostGrants, hostGrants } from './service/index.ts'
export type { HostGrants } from './service/index.ts'
export type { GrantClientView, GrantView } from './protocol/index.ts'

/** What the runtime adapter knows about a request beyond the Request itself. */
export interface RequestInfo {
  /** The TCP peer's IP address (IPv4, or IPv6 without brackets). */
  address?: string
}

export type { AddedSecret, ClientInfo, ClientRegistry, SecretInfo } from './clients/index.ts'
export type { AccountProvider, AccountRequest, AddressClaim, UserConfig } from './accounts/index.ts'
export type {
  AttemptLimitOptions,
  ClientIdMetadataDocumentsOptions,
  DeviceAuthorizationLimitOptions,
  DynamicClientRegistrationOptions,
  ScopeConfig,
  TokenServiceOptions,
  UserCodeLimitOptions,
  BackchannelLogoutOptions,
  AuthorizationDetailsOptions,
  AuthorizationDetailsTypeOptions,
  StandardSchemaLike,
  CibaNotification,
  CibaOptions,
} from './config/index.ts'
export type { ClientRegistration } from './clients/index.ts'
export type { Logger } from './events/index.ts'
export type { SigningAlgorithm } from './crypto/index.ts'
export type { Theme } from './pages/index.ts'
export { OAuthError, StoreUnavailableError } from './errors.ts'
export type { EventHook, GatehouseEvent, GatehouseEventType } from './events/index.ts'
export type { CheckResult } from './ops/index.ts'
export type { GrantsPageOptions, HealthOptions } from './config/index.ts'
export { createMetrics } from './events/index.ts'
export type {
  ClientAuthenticationFailure,
  EndpointName,
  IssuingGrantType,
  Metrics,
  MetricsHook,
  ThrottledKind,
} from './events/index.ts'
export type { AttemptLimits, Limiter, OutboundFetch, ThrottleRule } from './security/index.ts'
export { storeLimiter } from './security/index.ts'
export type { OAuthErrorCode } from './errors.ts'
export type { InteractionHook, InteractionResult, LoginResult, PendingInteraction } from './config/index.ts'
export { Permissions, scopePermission } from './clients/index.ts'
export { WORKERS_PBKDF2_LIMIT, hashSecret, verifySecret } from './security/index.ts'
export type { SecretDigest } from './security/index.ts'
export type { JwsSigner, SignFunction, SignerKey } from './crypto/index.ts'
export type {
  IdentityAssertionAccountQuery,
  IdentityAssertionIssuer,
  IdentityAssertionOptions,
  IdentityAssertionTrustOptions,
} from './config/index.ts'
export type {
  TokenExchangeActor,
  TokenExchangeDecision,
  TokenExchangeOptions,
  TokenExchangeParty,
  TokenExchangeRequest,
} from './config/index.ts'
export type {
  IdentityAssertionAudience,
  IdentityAssertionDecision,
  IdentityAssertionIdpOptions,
  IdentityAssertionRequest,
} from './config/index.ts'
export { CIBA_REQUEST_RETENTION, createMemoryStore, DEVICE_CODE_RETENTION } from './storage/index.ts'
export type {
  AttemptCounter,
  AttemptTaken,
  AuthorizationDetail,
  CibaDecision,
  CibaPoll,
  CibaRequestRecord,
  ClientMetadata,
  ClientRecord,
  CodeRecord,
  Consumed,
  DeviceCodeRecord,
  DeviceDecision,
  DevicePoll,
  GrantRecord,
  InteractionRecord,
  KeyRecord,
  PublicJwkSet,
  PushedRequestRecord,
  Redeemed,
  RefreshTokenRecord,
  SecretRecord,
  SelfRegistration,
  SessionRecord,
  Store,
  TokenEndpointAuthMethod,
} from './storage/index.ts'

/** A signing key as the host sees it. */
export interface KeyInfo {
  kid: string
  alg: string
  createdAt: number
  activatesAt: number
  retiresAt?: number
  expiresAt?: number
}

function toKeyInfo(record: KeyRecord): KeyInfo {
  const { kid, alg, createdAt, activatesAt, retiresAt, expiresAt } = record
  return {
    kid,
    alg,
    createdAt,
    activatesAt,
    ...(retiresAt !== undefined ? { retiresAt } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  }
}

/**
 * Creates the token service. Options are validated here: a bad option throws a TypeError naming it.
 *
 * @example
 * const service = createTokenService({ issuer: 'https://auth.example.com' })
 * await service.clients.ensure({
 *   clientId: 'reporting-job',
 *   clientSecret: process.env.REPORTING_JOB_SECRET,
 *   permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
 * })
 * Deno.serve(service.fetch)
 */
export function createTokenService(options: TokenServiceOptions): TokenService {
  const config = parseOptions(options)
  const ctx = createServiceContext(config)
  const { store, keyring, clients, users } = ctx
  const handler = createHandler(ctx)
  const clientAddress = config.clientAddress
  /** The host's `clientAddress`; one that throws counts as no address (logged, never a 500). */
  function hostAddress(
    hook: NonNullable<typeof clientAddress>,
    request: Request,
    info: RequestInfo | undefined,
  ): string | undefined {
    try {
      return hook(request, info?.address)
    } catch (err) {
      ctx.logger.error('clientAddress failed', { error: err instanceof Error ? err.name : typeof err })
      return undefined
    }
  }

  return {
    fetch: (request: Request, info?: RequestInfo): Promise<Response> => {
      const address = canonicalAddress(clientAddress ? hostAddress(clientAddress, request, info) : info?.address)
      if (address !== undefined) bindRequest(request, address)
      return handler(request)
    },
    issuer: config.issuer,
    endpoints: ctx.urls,
    clients: {
      ensure: clients.ensure,
      sync: clients.sync,
      find: clients.find,
      list: clients.list,
      update: clients.update,
      delete: clients.delete,
      addSecret: clients.addSecret,
      retireSecret: clients.retireSecret,
      pruneDynamic: clients.pruneDynamic,
    },
    interactions: {
      get: (uid: string): Promise<PendingInteraction | undefined> => pendingInteraction(uid, ctx),
      complete: (uid: string, result: InteractionResult, request?: Request): Promise<Response> =>
        completeHostInteraction(uid, result, request, ctx),
    },
    ciba: {
      decide: (input: CibaDecisionInput): Promise<CibaDecisionOutcome> => decideCiba(input, ctx),
    },
    grants: hostGrants(ctx),
    sessions: {
      end: (request: Request) => endRequestSession(request, ctx),
      endAll: (sub: string) => endSubjectSessions(sub, ctx),
    },
    keys: {
      jwks: () => keyring.jwks(),
      async list(): Promise<KeyInfo[]> {
        return (await keyring.list()).map(toKeyInfo)
      },
      async rotate(options: { algorithms?: SigningAlgorithm[] } = {}): Promise<KeyInfo[]> {
        return (await keyring.rotate(options.algorithms)).map(toKeyInfo)
      },
    },
    async ready(): Promise<void> {
      await Promise.all([
        users.ready,
        keyring.signingKey(config.accessTokenSigningAlg),
        keyring.signingKey(config.idTokenSigningAlg),
      ])
    },
    store,
    async close(): Promise<void> {
      await store.close?.()
    },
  }
}

/** The names of the endpoints whose absolute URLs `service.endpoints` lists. */
export type EndpointUrlName =
  | 'interaction'
  | 'authorization'
  | 'token'
  | 'userinfo'
  | 'logout'
  | 'introspection'
  | 'revocation'
  | 'registration'
  | 'par'
  | 'deviceAuthorization'
  | 'verification'
  | 'backchannelAuthentication'
  | 'cibaApproval'
  | 'grantManagement'
  | 'jwks'
  | 'openidConfiguration'
  | 'oauthMetadata'

/** What {@link createTokenService} returns. */
export interface TokenService {
  /**
   * The fetch handler serving every endpoint. Adapters pass the TCP peer's address as
   * `info.address` (throttling, `allowedNetworks` and audit events use it).
   */
  fetch(request: Request, info?: RequestInfo): Promise<Response>
  /** The issuer identifier, as configured. */
  readonly issuer: string
  /** Absolute URLs of the endpoints. */
  readonly endpoints: Record<EndpointUrlName, string>
  /** Host-side client registration. */
  readonly clients: Omit<ClientRegistry, 'get' | 'forget' | 'touch' | 'rehashSecret'>
  /** Host-side sign-in: read a pending interaction, and resume it once the host's login is done. */
  readonly interactions: {
    get(uid: string): Promise<PendingInteraction | undefined>
    /**
     * Completes a pending authorization request and returns the Response for the browser: a
     * redirect to the client with the code (or the error), setting the session cookie. For a
     * device authorization (`kind: 'device'`): the redirect to its confirmation page.
     */
    complete(uid: string, result: InteractionResult, request?: Request): Promise<Response>
  }
  /** Client-Initiated Backchannel Authentication (OpenID CIBA): decisions from the host's own app. */
  readonly ciba: {
    /**
     * Records the end-user's decision on a pending CIBA request, as the approval page does: the
     * host's authenticator app, having signed `sub` in, passes the approval URL `ciba.notify` gave
     * it. Only the end-user the request names may decide (`wrong_user`), once (`invalid` after);
     * a ping-mode client is then notified.
     * @example
     * await service.ciba.decide({ approval: notification.approvalUrl, sub: 'user-1', approve: true })
     */
    decide(input: CibaDecisionInput): Promise<CibaDecisionOutcome>
  }
  /** Grants: what each client may do for an end-user, listed and revoked (#42; see docs/grants.md). */
  readonly grants: HostGrants
  /** Browser sessions (single sign-on). */
  readonly sessions: {
    /**
     * Ends the session of the browser that sent `request` (the host's own sign-out page), as
     * RP-Initiated Logout does: its grants without `offline_access` are revoked and its clients
     * get back-channel logout tokens (in the background). Put `setCookie` on the response: it
     * clears the session cookie.
     * @example
     * const { setCookie } = await service.sessions.end(request)
     * return new Response('Signed out', { headers: { 'set-cookie': setCookie } })
     */
    end(request: Request): Promise<{ ended: boolean; sub?: string; sid?: string; setCookie: string }>
    /**
     * Ends every live session of the end-user `sub` (after a password change or a lock-out), each
     * as `end` does, back-channel logout included. Resolves how many sessions it ended.
     * @example
     * await service.sessions.endAll('user-1')
     */
    endAll(sub: string): Promise<number>
  }
  /** Signing keys. */
  readonly keys: {
    /** The public JWKS as published. */
    jwks(): Promise<{ keys: Record<string, unknown>[] }>
    /** Every key's public metadata (no private members). */
    list(): Promise<KeyInfo[]>
    /**
     * Rotates the signing keys: new keys are published at once and sign after `keyPublishAhead`
     * seconds; the old ones stop signing then and stay published until their tokens expired.
     */
    rotate(options?: { algorithms?: SigningAlgorithm[] }): Promise<KeyInfo[]>
  }
  /** Settles when built-in users are hashed and signing keys are loaded (or generated). */
  ready(): Promise<void>
  /** The store in use. */
  readonly store: Store
  /** Releases the store's connections. */
  close(): Promise<void>
}
