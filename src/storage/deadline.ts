/**
 * @module storage/deadline
 * Client-side deadlines for store calls. A database that cannot be reached over a network that
 * drops packets (a partition, a host gone without a reset) never answers and never closes the
 * connection, so a call without a deadline waits for as long as the kernel keeps the socket: the
 * request hangs, and so does every request queued behind it on the same pool (#27 item 10).
 *
 * Every call waits the same time, so calls expire in the order they start: one queue and one
 * ticker for all of them (a check every quarter of the timeout, at most 250 ms) instead of a
 * timer per call, and no ticker at all while nothing is pending. A call expires between
 * `timeout` and `timeout` plus one tick after it started.
 */

/** The rejection of a call that did not settle in time; `code` is what the stores classify. */
export class DeadlineExceededError extends Error {
  readonly code = 'QUERY_TIMEOUT'
  constructor(timeoutMs: number) {
    super(`no answer from the store within ${timeoutMs} ms`)
    this.name = 'DeadlineExceededError'
  }
}

interface Pending<Tag> {
  at: number
  tag: Tag
  reject: ((err: Error) => void) | undefined
  next: Pending<Tag> | undefined
}

export interface DeadlineOptions<Tag> {
  /** Milliseconds a call may take. */
  timeoutMs: number
  /** Runs for every call that expired, with the tag it was started with (e.g. its pool). */
  onExpire?: (tag: Tag) => void
  /** Clock in milliseconds. Default `performance.now`. */
  now?: () => number
  /** Starts a repeating timer; returns its cancel. Default `setInterval`, not keeping a process alive. */
  every?: (fn: () => void, ms: number) => () => void
}

export interface Deadlines<Tag> {
  /** `work`'s outcome, or a DeadlineExceededError once the timeout has passed without one. */
  race<T>(work: PromiseLike<T>, tag: Tag): Promise<T>
  /** Expires what is due now (the ticker calls it; tests with their own clock too). */
  tick(): void
  /** Calls not yet settled or expired (tests). */
  readonly pending: number
}

function defaultEvery(fn: () => void, ms: number): () => void {
  const timer = setInterval(fn, ms)
  // Node and Bun: a pending deadline must not keep a finished process alive.
  ;(timer as { unref?: () => void }).unref?.()
  return () => clearInterval(timer)
}

/** Creates the deadlines of one store. */
export function createDeadlines<Tag>(options: DeadlineOptions<Tag>): Deadlines<Tag> {
  const { timeoutMs } = options
  const now = options.now ?? (() => performance.now())
  const every = options.every ?? defaultEvery
  const tickMs = Math.max(1, Math.min(250, Math.floor(timeoutMs / 4)))
  let head: Pending<Tag> | undefined
  let tail: Pending<Tag> | undefined
  let pending = 0
  let stop: (() => void) | undefined

  function tick(): void {
    const at = now()
    while (head && (head.reject === undefined || head.at <= at)) {
      const entry = head
      head = entry.next
      if (entry.reject) {
        const reject = entry.reject
        entry.reject = undefined
        pending--
        reject(new DeadlineExceededError(timeoutMs))
        options.onExpire?.(entry.tag)
      }
    }
    if (!head) {
      tail = undefined
      stop?.()
      stop = undefined
    }
  }

  return {
    race<T>(work: PromiseLike<T>, tag: Tag): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const entry: Pending<Tag> = { at: now() + timeoutMs, tag, reject, next: undefined }
        if (tail) tail.next = entry
        else head = entry
        tail = entry
        pending++
        stop ??= every(tick, tickMs)
        work.then(
          (value) => {
            if (entry.reject === undefined) return // expired: the late answer is dropped
            entry.reject = undefined
            pending--
            resolve(value)
          },
          (err: unknown) => {
            if (entry.reject === undefined) return
            entry.reject = undefined
            pending--
            reject(err)
          },
        )
      })
    },
    tick,
    get pending() {
      return pending
    },
  }
}
