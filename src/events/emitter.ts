/**
 * @module events/emitter
 * Audit events for the host's `onEvent` hook: what happened, to which client, subject, grant and
 * token id, in which request. Events never carry a secret, a password or a token value: they name
 * tokens by `jti` and grants by id. A throwing or rejecting hook is logged and never fails a request.
 */
import type { EventHook, EventInput, GatehouseEvent } from './types.ts'
import type { Logger } from './logger.ts'
import type { MetricsHook } from './metrics.ts'

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
  /** Where an async hook's promise goes so that the host keeps running it (Workers' `waitUntil`). */
  waitUntil?: (promise: Promise<unknown>) => void,
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
        const settled = (result as Promise<void>).catch((err: unknown) =>
          logger.error('onEvent hook failed', { type: event.type, err }),
        )
        waitUntil?.(settled)
      }
    } catch (err) {
      logger.error('onEvent hook failed', { type: event.type, err })
    }
  }
  return Object.assign(emit, { active: hook !== undefined || observe !== undefined })
}

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
const CIBA_GRANT = 'urn:openid:params:grant-type:ciba'
const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

/** Feeds the metrics from the audit events: tokens issued, failed client authentications, throttling. */
export function metricsObserver(metrics: MetricsHook): (input: EventInput) => void {
  return (input) => {
    switch (input.type) {
      case 'token.issued':
        metrics.tokenIssued(
          input.grantType === DEVICE_CODE_GRANT
            ? 'device_code'
            : input.grantType === CIBA_GRANT
              ? 'ciba'
              : input.grantType === JWT_BEARER_GRANT
                ? 'jwt_bearer'
                : input.grantType,
        )
        return
      case 'token.refreshed':
        metrics.tokenIssued('refresh_token')
        return
      case 'token.exchanged':
        metrics.tokenIssued('token_exchange')
        return
      case 'client.authentication_failed':
        metrics.clientAuthenticationFailed(input.reason)
        if (input.reason === 'throttled') metrics.throttled('client_authentication')
        return
      case 'signin.failed':
      case 'device.user_code_failed':
        if (input.reason === 'throttled') metrics.throttled('sign_in')
        return
    }
  }
}
