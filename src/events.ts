/**
 * @module events
 * Audit events for the host's `onEvent` hook: what happened, to which client, subject, grant and
 * token id, in which request. Events never carry a secret, a password or a token value: they name
 * tokens by `jti` and grants by id. A throwing or rejecting hook is logged and never fails a request.
 */
import type { Logger } from './options.ts'
import type { MetricsHook } from './ops/metrics.ts'

/** Fields every event carries. */
export interface EventBase {
  /** Epoch seconds. */
  time: number
  /** The request's id: its `X-Request-Id` header when it sent a well-formed one, else a random UUID. */
  requestId: string
  /** The source address the adapter (or `clientAddress`) reported, when known. */
  address?: string
}

/** What a token-related event names. Values are identifiers, never token values. */
interface Subjects {
  clientId: string
  /** The end-user (or, for client_credentials, the client) the token is about. */
  sub?: string
  /** The grant (refresh token family) id. */
  grantId?: string
  /** The access token's `jti`. */
  jti?: string
}

/** Every audit event, discriminated by `type`. */
export type GatehouseEvent = EventBase &
  (
    | ({ type: 'token.issued'; grantType: 'client_credentials' | 'authorization_code'; scope: string } & Subjects)
    | ({ type: 'token.refreshed'; scope: string } & Subjects)
    | ({ type: 'code.redeemed' } & Subjects)
    | ({ type: 'code.replay_detected' } & Subjects)
    | ({ type: 'refresh_token.reuse_detected' } & Subjects)
    | ({ type: 'token.revoked'; tokenType: 'access_token' | 'refresh_token' } & Subjects)
    | ({ type: 'token.introspected'; active: boolean } & Subjects)
    | {
        type: 'client.authentication_failed'
        /** The client id the caller claimed (it may not exist). */
        clientId?: string
        reason: 'unknown_client' | 'invalid_secret' | 'missing_secret' | 'network_not_allowed' | 'throttled'
      }
    | { type: 'signin.succeeded'; clientId: string; sub: string; sid?: string }
    | {
        type: 'signin.failed'
        clientId: string
        /** The username typed, only when it names a user (a mistyped one may be a password). */
        username?: string
        reason: 'invalid_credentials' | 'throttled'
      }
    | { type: 'session.ended'; sub: string; sid: string; clientId?: string }
    | { type: 'key.rotated'; kids: string[]; algorithms: string[] }
    | {
        /** A client registered itself (RFC 7591). */
        type: 'client.registered'
        clientId: string
        /** `none`, `client_secret_basic` or `client_secret_post`. */
        authMethod: string
        grantTypes: string[]
        scope: string
      }
    | { type: 'client.registration_updated' | 'client.registration_deleted'; clientId: string }
    | {
        /** A registration or RFC 7592 request was refused. */
        type: 'client.registration_failed'
        /** The client of an RFC 7592 request, when the path named one. */
        clientId?: string
        reason:
          | 'invalid_initial_access_token'
          | 'invalid_registration_access_token'
          | 'invalid_metadata'
          | 'too_many_registrations'
          | 'throttled'
      }
  )

/** The event types. */
export type GatehouseEventType = GatehouseEvent['type']

/** An event as the emitting code builds it: the base fields are added by the emitter. */
export type EventInput = GatehouseEvent extends infer E
  ? E extends EventBase
    ? Omit<E, keyof EventBase>
    : never
  : never

/** The host's hook. */
export type EventHook = (event: GatehouseEvent) => void | Promise<void>

/** Per-request facts the adapters and the service know (see `RequestMeta`). */
export interface RequestMeta {
  address?: string
  requestId(): string
}

/** Sends an event to the host's hook and the metrics. */
export interface Emitter {
  (meta: RequestMeta | undefined, input: EventInput): void
  /** Whether anyone listens: code that builds an event only to emit it checks this first. */
  readonly active: boolean
}

/**
 * Creates the emitter; a no-op when there is neither a hook nor an observer. `observe` sees each
 * event as the code built it (no base fields), synchronously, before the hook: the metrics count
 * from there (see `metricsObserver`).
 */
export function createEmitter(
  hook: EventHook | undefined,
  logger: Logger,
  now: () => number,
  observe?: (input: EventInput) => void,
): Emitter {
  function emit(meta: RequestMeta | undefined, input: EventInput): void {
    if (observe) observe(input)
    if (!hook) return
    const event = {
      ...input,
      time: now(),
      requestId: meta?.requestId() ?? crypto.randomUUID(),
      ...(meta?.address !== undefined ? { address: meta.address } : {}),
    } as GatehouseEvent
    try {
      const result = hook(event)
      if (result && typeof (result as Promise<void>).catch === 'function') {
        ;(result as Promise<void>).catch((err: unknown) =>
          logger.error('onEvent hook failed', { type: event.type, err }),
        )
      }
    } catch (err) {
      logger.error('onEvent hook failed', { type: event.type, err })
    }
  }
  return Object.assign(emit, { active: hook !== undefined || observe !== undefined })
}

/** Feeds the metrics from the audit events: tokens issued, failed client authentications, throttling. */
export function metricsObserver(metrics: MetricsHook): (input: EventInput) => void {
  return (input) => {
    switch (input.type) {
      case 'token.issued':
        metrics.tokenIssued(input.grantType)
        return
      case 'token.refreshed':
        metrics.tokenIssued('refresh_token')
        return
      case 'client.authentication_failed':
        metrics.clientAuthenticationFailed(input.reason)
        if (input.reason === 'throttled') metrics.throttled('client_authentication')
        return
      case 'signin.failed':
        if (input.reason === 'throttled') metrics.throttled('sign_in')
        return
    }
  }
}
