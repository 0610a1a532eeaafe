/**
 * @module events
 * Audit events, the logger, the store-error log and the metrics counted from events. This index is
 * what the rest of the code imports; nothing outside the folder imports its other files.
 */
export { createEmitter, type Emitter, metricsObserver, type RequestMeta } from './emitter.ts'
export type { Logger } from './logger.ts'
export {
  createMetrics,
  type EndpointName,
  type IssuingGrantType,
  type Metrics,
  type MetricsHook,
  type ThrottledKind,
} from './metrics.ts'
export { createStoreErrorLog } from './store_error_log.ts'
export type { ClientAuthenticationFailure, EventHook, GatehouseEvent, GatehouseEventType } from './types.ts'
