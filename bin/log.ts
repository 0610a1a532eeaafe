/**
 * The standalone server's output: plain lines (`LOG_FORMAT=text`, the default) or one JSON object
 * per line (`LOG_FORMAT=json`: `time`, `level`, `msg` and the fields), for the start-up lines, the
 * shutdown and the service's own warnings and errors alike. Nothing logged carries a secret or a
 * token value (the service never passes one, and the start-up lines name no secret).
 */
import type { Logger } from '../src/index.ts'

export type LogFormat = 'text' | 'json'

type Fields = Record<string, unknown>

export interface Log {
  /** Progress and results: stdout. */
  info(message: string, fields?: Fields): void
  /** Something the operator should fix: stderr. */
  warn(message: string, fields?: Fields): void
  /** A failure: stderr. */
  error(message: string, fields?: Fields): void
  /** The service's `logger` option, writing in the same format. */
  service: Logger
}

/** Errors as `Name: message` (JSON.stringify makes `{}` of them), bigints as strings. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return `${value.name}: ${value.message}`
  if (typeof value === 'bigint') return String(value)
  return value
}

function jsonLine(level: string, message: string, fields: Fields | undefined): string {
  const record = { time: new Date().toISOString(), level, msg: message, ...fields }
  try {
    return JSON.stringify(record, replacer)
  } catch {
    // A field that cannot be serialised (a cycle): the message alone.
    return JSON.stringify({ time: record.time, level, msg: message })
  }
}

/** Creates the log of the start script in `format`. */
export function createLog(format: LogFormat): Log {
  if (format === 'json') {
    return {
      info: (message, fields) => console.log(jsonLine('info', message, fields)),
      warn: (message, fields) => console.error(jsonLine('warn', message, fields)),
      error: (message, fields) => console.error(jsonLine('error', message, fields)),
      service: {
        warn: (message, detail) => console.error(jsonLine('warn', message, detail)),
        error: (message, detail) => console.error(jsonLine('error', message, detail)),
      },
    }
  }
  const detailText = (detail: Fields | undefined) => (detail ? ` ${JSON.stringify(detail, replacer)}` : '')
  return {
    info: (message) => console.log(message),
    warn: (message) => console.error(`gatehouse: ${message}`),
    error: (message) => console.error(`gatehouse: ${message}`),
    service: {
      warn: (message, detail) => console.warn(`[gatehouse] ${message}${detailText(detail)}`),
      error: (message, detail) => console.error(`[gatehouse] ${message}${detailText(detail)}`),
    },
  }
}
