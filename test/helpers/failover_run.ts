/**
 * One failover under load (#43 item 4), whatever the topology: two instances under the load of
 * failover_load.ts, the primary killed (`kill`), the run waits for the promotion (`promoted`),
 * brings the old primary back (`restart`: as an operator or a supervisor would; with waitReplicas
 * the promoted primary needs a replica to acknowledge), runs on until 5 s pass without a failure
 * (at most 20 s after the promotion), audits, and prints the figures.
 */
import { expect } from 'vitest'
import type { Store } from '../../src/storage/types.ts'
import { FailoverLoad, type Sample, startInstances, summarize } from './failover_load.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface FailoverFigures {
  samples: Sample[]
  /** Requests started between the kill and the promotion. */
  during: Sample[]
  /** Requests after the kill answered 5xx. */
  failures: Sample[]
  /** Milliseconds from the promotion to the end of the last failed request (0: none after it). */
  recoveredAfterPromotion: number
  slowest: number
  audit: Awaited<ReturnType<FailoverLoad['audit']>>
}

export async function runFailover(options: {
  label: string
  makeStore: () => Promise<Store & { close(): Promise<void> }>
  /** Kills the primary; returns its name for the report. */
  kill: () => Promise<string>
  /** True once a replica has been promoted. */
  promoted: () => Promise<boolean>
  restart: () => Promise<void>
}): Promise<FailoverFigures> {
  const stores: Array<{ close(): Promise<void> }> = []
  const handlers = await startInstances(async () => {
    const store = await options.makeStore()
    stores.push(store)
    return store
  })
  const load = new FailoverLoad(handlers)
  try {
    await load.prepare()
    load.start()
    await sleep(3000)
    const killedAt = performance.now()
    const killed = await options.kill()
    let promotedAt = Number.NaN
    while (performance.now() - killedAt < 30_000) {
      if (await options.promoted().catch(() => false)) {
        promotedAt = performance.now()
        break
      }
      await sleep(100)
    }
    if (Number.isNaN(promotedAt)) throw new Error(`${options.label}: no replica promoted within 30 s`)
    await options.restart()
    const restartedAt = performance.now()
    const failed = () => load.samples.filter((s) => s.start > killedAt && s.status >= 500)
    while (performance.now() - promotedAt < 20_000) {
      const last = failed().at(-1)
      if (performance.now() - Math.max(promotedAt, last ? last.start + last.ms : 0) > 5000) break
      await sleep(250)
    }
    await load.stop()
    const audit = await load.audit()
    const during = load.samples.filter((s) => s.start >= killedAt && s.start < promotedAt)
    const failures = failed()
    const lastFailure = failures.at(-1)
    const recoveredAfterPromotion = lastFailure ? Math.max(0, lastFailure.start + lastFailure.ms - promotedAt) : 0
    const slowest = Math.max(...load.samples.map((s) => s.ms))
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
    console.log(
      [
        `#43 item 4, ${options.label}: killed ${killed}; a replica promoted after ${seconds(promotedAt - killedAt)}; the old primary restarted ${seconds(restartedAt - promotedAt)} later`,
        `  all: ${summarize(load.samples)}`,
        `  between kill and promotion: ${summarize(during)}`,
        `  503s: ${failures.length}; last failure ${seconds(recoveredAfterPromotion)} after the promotion; slowest request ${slowest.toFixed(0)} ms`,
        `  lost: ${audit.lostCodes} codes, ${audit.lostTokens} refresh tokens answered 200; second redemptions: ${audit.secondRedemptions}; chains ended by a retry after a 503: ${audit.endedAfter503}`,
      ].join('\n'),
    )
    return { samples: load.samples, during, failures, recoveredAfterPromotion, slowest, audit }
  } finally {
    await load.stop()
    for (const store of stores) await store.close()
  }
}

const STORE_DEADLINE_MS = 2000

/**
 * What a failover must show: no 5xx but 503, each with Retry-After; no request past a few store
 * deadlines (its operations run in sequence, each bounded by the 2 s command deadline and, with
 * waitReplicas, the WAIT timeout); back within 10 s of the promotion; no second redemption; with
 * waitReplicas nothing answered 200 lost; with `othersServed`, requests that touch no lost part
 * answered meanwhile.
 */
export function expectFailoverFigures(
  figures: FailoverFigures,
  { waitReplicas, othersServed }: { waitReplicas: number; othersServed: boolean },
): void {
  const { samples, during, failures, recoveredAfterPromotion, slowest, audit } = figures
  expect(samples.filter((s) => s.status >= 500 && s.status !== 503)).toEqual([])
  expect(failures.every((s) => s.retryAfter !== null && s.retryAfter !== undefined)).toBe(true)
  expect(failures.every((s) => s.error === 'temporarily_unavailable' || s.kind === 'authorize')).toBe(true)
  expect(slowest).toBeLessThan(3 * STORE_DEADLINE_MS)
  if (othersServed) expect(during.filter((s) => s.status === 200 || s.status === 303).length).toBeGreaterThan(0)
  expect(recoveredAfterPromotion).toBeLessThan(10_000)
  expect(audit.secondRedemptions).toBe(0)
  if (waitReplicas > 0) {
    expect(audit.lostTokens).toBe(0)
    expect(audit.lostCodes).toBe(0)
  }
  // Unexpected refusals: only a refresh retried after a 503, or a lost write, may be refused.
  const refused = samples.filter((s) => s.status >= 400 && s.status < 500)
  expect(refused.length).toBeLessThanOrEqual(audit.endedAfter503 + audit.lostCodes + audit.lostTokens)
}
