/**
 * @module events/store_error_log
 * Logs store failures without flooding (#27 item 10): during an outage every request fails the
 * same way, and one line per request (28,000 lines in 6 s under load) buries everything else. The
 * first failure of a kind is logged at once, in full; repeats within the window are counted and
 * summarised in one line when the window ends (`store unavailable ×N in 5 s: <kind>`), window
 * after window while they go on. A window without repeats ends the episode: the next failure of
 * that kind is logged at once again. The kind names the store's failure and its cause's code,
 * never a URL or a credential.
 */
import type { Logger } from './logger.ts'

export interface StoreErrorLogOptions {
  /** Window in milliseconds. Default 5000. */
  windowMs?: number
  /** Runs `fn` once after `ms` (the clock: tests pass their own). Default `setTimeout`, not keeping a process alive. */
  later?: (fn: () => void, ms: number) => void
}

export interface StoreErrorLog {
  /** Logs (or counts) one failed request whose store was unavailable. */
  report(err: Error, detail: { path: string }): void
}

interface Episode {
  /** Repeats counted in the current window. */
  repeats: number
}

function defaultLater(fn: () => void, ms: number): void {
  const timer = setTimeout(fn, ms)
  ;(timer as { unref?: () => void }).unref?.()
}

/** `userinfo:password@` in anything URL-like, in case a driver's message quotes its URL. */
function withoutCredentials(text: string): string {
  return text.replace(/\/\/[^/\s@]*@/g, '//')
}

/** The code of the innermost cause that has one (`ECONNREFUSED`, `QUERY_TIMEOUT`, …), else its name. */
function causeCode(err: Error): string {
  let code: string | undefined
  let name = err.name
  for (let e: unknown = err.cause, depth = 0; e instanceof Object && depth < 5; e = (e as Error).cause, depth++) {
    const value = (e as { code?: unknown }).code
    if (typeof value === 'string' && value !== '') code = value
    if (e instanceof Error) name = e.name
  }
  return code ?? name
}

/**
 * The kind of a store failure: the store's message without the operation it failed in, and the
 * cause's code: `database unavailable (ECONNREFUSED)`.
 */
export function storeErrorKind(err: Error): string {
  const store = err.message.replace(/ during .*$/s, '')
  return withoutCredentials(`${store} (${causeCode(err)})`).slice(0, 200)
}

/** Creates the store failure log over `logger`. */
export function createStoreErrorLog(logger: Logger, options: StoreErrorLogOptions = {}): StoreErrorLog {
  const windowMs = options.windowMs ?? 5000
  const later = options.later ?? defaultLater
  const episodes = new Map<string, Episode>()
  const seconds = `${Math.round(windowMs / 100) / 10} s`

  function windowEnd(kind: string): void {
    const episode = episodes.get(kind)
    if (!episode) return
    if (episode.repeats === 0) {
      episodes.delete(kind)
      return
    }
    logger.error(`store unavailable ×${episode.repeats} in ${seconds}: ${kind}`, {
      kind,
      count: episode.repeats,
    })
    episode.repeats = 0
    later(() => windowEnd(kind), windowMs)
  }

  return {
    report(err, detail) {
      const kind = storeErrorKind(err)
      const episode = episodes.get(kind)
      if (episode) {
        episode.repeats++
        return
      }
      episodes.set(kind, { repeats: 0 })
      logger.error('store unavailable', {
        kind,
        path: detail.path,
        cause: withoutCredentials(`${err.name}: ${err.message}`),
        note: `repeats are counted and logged every ${seconds}`,
      })
      later(() => windowEnd(kind), windowMs)
    },
  }
}
