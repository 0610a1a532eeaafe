/**
 * @module events/logger
 * The log sink of the `logger` option. Its own module so the options, the event emitter and the
 * context can all name it without importing each other.
 */

/** A log sink. Messages never carry secrets or token values. */
export interface Logger {
  warn(message: string, detail?: Record<string, unknown>): void
  error(message: string, detail?: Record<string, unknown>): void
}
