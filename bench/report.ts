/**
 * Turns the benchmark's samples into Markdown: the main table (median requests/s, p50, p99 and
 * peak RSS per server and scenario), the ratio table (Gatehouse / node-oidc-provider and
 * Gatehouse / ceiling), one row against another from the same rounds (#43: the Redis Cluster
 * against one node), each store against memory and #44's targets judged from the same rounds
 * (#44 item 5) and the store-size table (flat cost, memory per refresh token).
 * Pure functions: no I/O.
 */
import type { ColdStart } from './cold_start.ts'
import type { LoadResult } from './load.ts'
import type { SizeResult } from './store_size.ts'

/** One measurement: one fresh server process, one scenario, one round. */
export interface Sample extends LoadResult {
  /** VmHWM of the server process at the end of the run, bytes. */
  peakRss: number
  /** What the server reported when it became ready (seeding measurements). */
  ready: Record<string, unknown>
  /** Share of the server's and the load's core that other processes used meanwhile (pinned runs). */
  foreign?: { server: number; load: number }
  /**
   * CPU time per answered request in the measured window, µs: the server process (all threads)
   * and the store's server processes (postgres, redis-server), whoever caused it.
   */
  cpu?: { server: number; store: number }
  /** The round it was measured in (0-based), so cells of one round can be paired. */
  round?: number
}

/** Above this share of a core used by other processes a sample is flagged as disturbed. */
export const DISTURBED = 0.05

/** Everything measured (or not) for one server in one scenario. */
export interface Cell {
  scenario: string
  server: string
  samples: Sample[]
  /** Why there is no sample: skipped or failed. */
  notes: string[]
}

export interface Summary {
  rps: number
  p50: number
  p99: number
  peakRss: number
  rounds: number
  non2xx: number
  errors: number
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length === 0
    ? Number.NaN
    : sorted.length % 2
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/** Medians over the valid rounds (not exhausted): req/s, p50, p99 and each process's peak RSS. */
export function summarize(cell: Cell): Summary | undefined {
  const valid = cell.samples.filter((s) => !s.exhausted && s.requests > 0)
  if (valid.length === 0) return undefined
  return {
    rps: median(valid.map((s) => s.rps)),
    p50: median(valid.map((s) => s.p50)),
    p99: median(valid.map((s) => s.p99)),
    peakRss: median(valid.map((s) => s.peakRss)),
    rounds: valid.length,
    non2xx: valid.reduce((sum, s) => sum + s.non2xx, 0),
    errors: valid.reduce((sum, s) => sum + s.errors, 0),
  }
}

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–')
const ms = (n: number) => (Number.isFinite(n) ? (n < 10 ? n.toFixed(2) : n.toFixed(1)) : '–')
const mb = (bytes: number) => (Number.isFinite(bytes) ? `${Math.round(bytes / 1048576)}` : '–')
const ratio = (a: number | undefined, b: number | undefined) => (a && b ? `${(a / b).toFixed(2)}×` : '–')

export interface ReportInput {
  scenarios: { id: string; label: string }[]
  servers: { id: string; label: string }[]
  cells: Cell[]
  /** Server ids of the comparisons. */
  gatehouse: string[]
  peer: string
  /** The peer on the same store as a Gatehouse server (a column of its own in the ratio table). */
  storePeers?: Record<string, string>
  ceilings: string[]
  /** The store-size scenarios and the number of seeded tokens of each. */
  stores: { scenario: string; tokens: number }[]
  storeServer: string
  /** The bridge scenario: each bridge's throughput against the bare server's. */
  bridges?: { scenario: string; bare: string; servers: string[] }
  /**
   * DPoP's cost (#21): each DPoP scenario against `plain` on the same server, or on `plainOf[id]`
   * for a variant that runs only the DPoP scenario (its plain twin is the shipped server).
   */
  dpop?: { plain: string; scenarios: string[]; plainOf?: Record<string, string> }
  /**
   * #31: each Gatehouse memory row against the ceilings of its own runtime (the fastest of them
   * in the scenario), for these scenarios.
   */
  sameRuntime?: { scenarios: string[]; ceilingsOf: Record<string, string[]> }
}

/** The same-runtime target of #31: Gatehouse at least this share of its runtime's ceiling. */
export const SAME_RUNTIME_TARGET = 0.8

/**
 * "÷ ceiling of the same runtime" (#31): per scenario and Gatehouse memory row, its requests/s, the
 * fastest ceiling of its runtime in that scenario and the ratio (a ratio under the target is
 * marked); then the server CPU time per request of both (medians over rounds, measured window) and
 * the ceiling's CPU ÷ Gatehouse's: on a shared machine other processes move requests/s far more
 * than the CPU a request costs, so the CPU ratio is the steadier reading of the same question.
 * Empty when no row has both figures.
 */
export function sameRuntimeTable(input: ReportInput): string {
  if (!input.sameRuntime) return ''
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  const rps = (scenario: string, server: string) => {
    const cell = findCell(input, scenario, server)
    return cell ? summarize(cell)?.rps : undefined
  }
  const cpu = (scenario: string, server: string) => cpuPerRequest(findCell(input, scenario, server))?.server
  const perRound = (scenario: string, server: string, ceiling: string) =>
    sameRoundRatio(input, scenario, server, ceiling)?.ratio
  const lines = [
    '| scenario | Gatehouse on | req/s | fastest ceiling of its runtime | ceiling req/s | ÷ ceiling | ÷ ceiling, same round (median) | CPU µs/req | ceiling CPU µs/req | ÷ ceiling by CPU |',
    '|---|---|--:|---|--:|--:|--:|--:|--:|--:|',
  ]
  const share = (value: number | undefined) => {
    if (value === undefined || !Number.isFinite(value)) return '–'
    return `${value.toFixed(2)}×${value < SAME_RUNTIME_TARGET ? ` (below ${SAME_RUNTIME_TARGET})` : ''}`
  }
  let rows = 0
  for (const scenario of input.scenarios.filter((s) => input.sameRuntime?.scenarios.includes(s.id))) {
    for (const [server, ceilings] of Object.entries(input.sameRuntime.ceilingsOf)) {
      const own = rps(scenario.id, server)
      const best = ceilings
        .map((id) => ({ id, rps: rps(scenario.id, id) }))
        .filter((c): c is { id: string; rps: number } => c.rps !== undefined)
        .sort((a, b) => b.rps - a.rps)[0]
      if (own === undefined || best === undefined) continue
      const ownCpu = cpu(scenario.id, server)
      const bestCpu = cpu(scenario.id, best.id)
      const cells = [
        int(own),
        label(best.id),
        int(best.rps),
        share(own / best.rps),
        share(perRound(scenario.id, server, best.id)),
        ownCpu === undefined ? '–' : int(ownCpu),
        bestCpu === undefined ? '–' : int(bestCpu),
        share(ownCpu && bestCpu ? bestCpu / ownCpu : undefined),
      ]
      lines.push(`| ${scenario.label} | ${label(server)} | ${cells.join(' | ')} |`)
      rows++
    }
  }
  return rows > 0 ? lines.join('\n') : ''
}

function findCell(input: ReportInput, scenario: string, server: string): Cell | undefined {
  return input.cells.find((c) => c.scenario === scenario && c.server === server)
}

/** One round that has a valid sample of both cells: `server`'s req/s ÷ `base`'s in it. */
export interface RoundRatio {
  round: number
  ratio: number
  own: Sample
  base: Sample
}

/**
 * `server`'s req/s ÷ `base`'s within each round that has a valid sample of both (codes not run out,
 * requests answered), in the order of `server`'s samples.
 */
export function sameRoundRatios(input: ReportInput, scenario: string, server: string, base: string): RoundRatio[] {
  const valid = (id: string) =>
    findCell(input, scenario, id)?.samples.filter((x) => !x.exhausted && x.requests > 0 && x.round !== undefined) ?? []
  const theirs = valid(base)
  return valid(server).flatMap((own) => {
    const other = theirs.find((x) => x.round === own.round)
    return other ? [{ round: own.round as number, ratio: own.rps / other.rps, own, base: other }] : []
  })
}

/**
 * The median over rounds of `server`'s req/s ÷ `base`'s within one round, and how many rounds had
 * a valid sample of both: this machine's speed drifts over minutes (#31), and the two cells of one
 * round ran minutes apart at most. Undefined when no round has both.
 */
export function sameRoundRatio(
  input: ReportInput,
  scenario: string,
  server: string,
  base: string,
): { ratio: number; rounds: number } | undefined {
  const ratios = sameRoundRatios(input, scenario, server, base).map((r) => r.ratio)
  return ratios.length ? { ratio: median(ratios), rounds: ratios.length } : undefined
}

/** One row judged against another in the same run (#43 item 5: the Redis Cluster against one node). */
export interface Pair {
  server: string
  base: string
}

/**
 * #43 item 5: each pair's req/s beside its base's, per scenario: the ratio of the medians and the
 * median of the same-round ratios (the one to read, as for the ceilings of #31), with the rounds
 * paired and why a row has no figure (skipped, failed). Empty when no pair has a cell in the run.
 */
export function pairTable(input: ReportInput, scenarios: string[], pairs: Pair[]): string {
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  const lines = [
    '| scenario | server | req/s | against | its req/s | ÷, medians | ÷, same round (median) | rounds paired | notes |',
    '|---|---|--:|---|--:|--:|--:|--:|---|',
  ]
  for (const scenario of input.scenarios.filter((s) => scenarios.includes(s.id))) {
    for (const { server, base } of pairs) {
      const own = findCell(input, scenario.id, server)
      const other = findCell(input, scenario.id, base)
      if (!own && !other) continue
      const ownRps = own ? summarize(own)?.rps : undefined
      const baseRps = other ? summarize(other)?.rps : undefined
      const paired = sameRoundRatio(input, scenario.id, server, base)
      const notes = [...(own?.notes ?? []), ...(other?.notes ?? []).map((note) => `${label(base)}: ${note}`)]
      const cells = [
        label(server),
        ownRps === undefined ? '–' : int(ownRps),
        label(base),
        baseRps === undefined ? '–' : int(baseRps),
        ratio(ownRps, baseRps),
        paired ? `${paired.ratio.toFixed(2)}×` : '–',
        String(paired?.rounds ?? 0),
        [...new Set(notes)].join('; '),
      ]
      lines.push(`| ${scenario.label} | ${cells.join(' | ')} |`)
    }
  }
  return lines.length > 2 ? lines.join('\n') : ''
}

/** The share of a core other processes took during a sample (the busier of the server's and the load's). */
const foreignOf = (x: Sample): number | undefined =>
  x.foreign ? Math.max(x.foreign.server, x.foreign.load) : undefined

/**
 * A cell's notes: why it has no sample (skipped, failed), non-2xx answers and socket errors, the
 * rounds that shared a core with other processes, the rounds that ran out of codes.
 */
export function cellNotes(cell: Cell): string[] {
  const s = summarize(cell)
  const notes = [...cell.notes]
  if (s && (s.non2xx || s.errors)) notes.push(`${s.non2xx} non-2xx, ${s.errors} socket errors`)
  // autocannon pairs responses with request start times per connection; a reset connection can
  // shift that pairing, so latencies of such a run are not to be trusted.
  if (s?.errors) notes.push('latencies unreliable (connections were reset)')
  const disturbed = cell.samples.filter((x) => (foreignOf(x) ?? 0) > DISTURBED)
  if (disturbed.length > 0) {
    const worst = Math.max(...disturbed.map((x) => foreignOf(x) ?? 0))
    notes.push(`${disturbed.length} round(s) shared a core with other processes (up to ${Math.round(worst * 100)}%)`)
  }
  if (s && s.rounds < cell.samples.length)
    notes.push(`${cell.samples.length - s.rounds} round(s) invalid (codes ran out)`)
  return [...new Set(notes)]
}

/**
 * Medians over a cell's valid rounds of the CPU time per answered request in the measured window,
 * µs: the server's processes and the database's (NaN when the store lives in the server process).
 * Undefined when no valid round measured it.
 */
export function cpuPerRequest(cell: Cell | undefined): { server: number; store: number; rounds: number } | undefined {
  const valid = cell?.samples.filter((x) => x.cpu && !x.exhausted && x.requests > 0) ?? []
  if (valid.length === 0) return undefined
  return {
    server: median(valid.map((x) => x.cpu?.server ?? Number.NaN)),
    store: median(valid.map((x) => x.cpu?.store ?? Number.NaN)),
    rounds: valid.length,
  }
}

/** #44 item 5: a row of the stores table, a server and the store it stands for. */
export interface StoreRow {
  server: string
  label: string
}

const range = (values: number[]) =>
  values.length ? `${Math.min(...values).toFixed(2)} – ${Math.max(...values).toFixed(2)}` : '–'

/**
 * #44 item 5, the stores table: per scenario and store, req/s, the same-round ratio to the memory
 * row (median over rounds, and the rounds' min – max), p99, and the CPU per request split between
 * the server's processes and the database's (medians, measured window). A row without a figure
 * says why (skipped, failed); a row whose memory cell has none says so. Empty when no row has a cell.
 */
export function storesTable(input: ReportInput, scenarios: string[], memory: string, rows: StoreRow[]): string {
  const lines = [
    '| scenario | store | req/s | ÷ memory, same round (median) | ÷ memory per round, min – max | rounds paired | p99 ms | server CPU µs/req | database CPU µs/req | notes |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|---|',
  ]
  for (const scenario of input.scenarios.filter((s) => scenarios.includes(s.id))) {
    const base = findCell(input, scenario.id, memory)
    for (const row of rows) {
      const cell = findCell(input, scenario.id, row.server)
      if (!cell) continue
      const s = summarize(cell)
      const cpu = cpuPerRequest(cell)
      const isBase = row.server === memory
      const ratios = isBase ? [] : sameRoundRatios(input, scenario.id, row.server, memory).map((r) => r.ratio)
      const baseNotes = isBase ? [] : base ? base.notes.map((n) => `memory: ${n}`) : ['memory: not in this run']
      const cells = [
        s ? int(s.rps) : '–',
        isBase ? (s ? '1.00×' : '–') : ratios.length ? `${median(ratios).toFixed(2)}×` : '–',
        isBase ? '–' : range(ratios),
        isBase ? String(s?.rounds ?? 0) : String(ratios.length),
        s ? ms(s.p99) : '–',
        cpu ? int(cpu.server) : '–',
        // NaN: the store lives in the server process (SQLite), its CPU in the server's.
        cpu ? (Number.isFinite(cpu.store) ? int(cpu.store) : 'in the server') : '–',
        [...new Set([...cellNotes(cell), ...baseNotes])].join('; '),
      ]
      lines.push(`| ${scenario.label} | ${row.label} | ${cells.join(' | ')} |`)
    }
  }
  return lines.length > 2 ? lines.join('\n') : ''
}

/** One target of #44: `server`'s req/s at least `min` × `base`'s in `scenario`, same round. */
export interface Target {
  /** The issue's target, e.g. "PostgreSQL ≥ 0.6× memory". */
  what: string
  scenario: string
  server: string
  base: string
  min: number
}

const storeTargets = (what: string, server: string, base: string, min: number): Target[] =>
  ['authorization_code', 'refresh_token'].map((scenario) => ({ what, scenario, server, base, min }))

/** #44's targets (code redemption and refresh on each store; Node client_credentials against its ceiling). */
export const TARGETS_44: Target[] = [
  ...storeTargets('1. PostgreSQL ≥ 0.6× memory', 'gatehouse-node-postgres', 'gatehouse-node', 0.6),
  ...storeTargets(
    '1. PostgreSQL ≥ 2× node-oidc-provider on PostgreSQL',
    'gatehouse-node-postgres',
    'oidc-provider-postgres',
    2,
  ),
  ...storeTargets('2. Redis ≥ 0.85× memory', 'gatehouse-node-redis', 'gatehouse-node', 0.85),
  ...storeTargets('3. SQLite ≥ 0.8× memory', 'gatehouse-node-sqlite', 'gatehouse-node', 0.8),
  {
    what: '4. Node client_credentials ≥ 0.9× the batched ceiling',
    scenario: 'client_credentials',
    server: 'gatehouse-node',
    base: 'ceiling-crypto-batch',
    min: 0.9,
  },
]

/** met / not met from the rounds measured; skipped when the environment lacks a cell; no figure otherwise. */
export type TargetStatus = 'met' | 'not met' | 'skipped' | 'no figure'

export interface Verdict {
  target: Target
  status: TargetStatus
  /** Median of the same-round ratios, and their min and max. */
  ratio?: number
  low?: number
  high?: number
  /** Rounds with a valid sample of both cells. */
  rounds: number
  /**
   * Of those rounds, how many shared a core with other processes (more than DISTURBED of the
   * server's or the load's core in either cell) and the most they took; undefined when no sample
   * watched it (no CPU pinning).
   */
  busy?: { rounds: number; worst: number }
  notes: string[]
}

/**
 * #44 item 5: each target judged by the median over rounds of its same-round ratio. A target with a
 * cell the run did not select (--only, --scenario) is left out; one with a skipped cell (the
 * environment lacks its store or Node) is `skipped`; one whose cells have no valid round in common
 * (failed, codes ran out) has `no figure`.
 */
export function judgeTargets(input: ReportInput, targets: Target[]): Verdict[] {
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  return targets.flatMap((target): Verdict[] => {
    const ids = [target.server, target.base]
    const found = ids.map((id) => findCell(input, target.scenario, id))
    if (found.some((c) => !c)) return []
    const notes = ids.flatMap((id, i) => (found[i]?.notes ?? []).map((n) => `${label(id)}: ${n}`))
    const rounds = sameRoundRatios(input, target.scenario, target.server, target.base)
    if (found.some((c) => c?.notes.some((n) => n.startsWith('skipped'))))
      return [{ target, status: 'skipped', rounds: 0, notes }]
    if (rounds.length === 0)
      return [{ target, status: 'no figure', rounds: 0, notes: [...notes, 'no round with a valid sample of both'] }]
    const ratios = rounds.map((r) => r.ratio)
    const ratio = median(ratios)
    const shares = rounds.map((r) => [foreignOf(r.own), foreignOf(r.base)])
    const watched = shares.some((pair) => pair.some((x) => x !== undefined))
    const busyRounds = shares.filter((pair) => pair.some((x) => (x ?? 0) > DISTURBED))
    return [
      {
        target,
        status: ratio >= target.min ? 'met' : 'not met',
        ratio,
        low: Math.min(...ratios),
        high: Math.max(...ratios),
        rounds: rounds.length,
        ...(watched
          ? { busy: { rounds: busyRounds.length, worst: Math.max(0, ...shares.flat().map((x) => x ?? 0)) } }
          : {}),
        notes,
      },
    ]
  })
}

/** A ratio to two decimals, or three when two would round it across its target. */
const targetRatio = (value: number, min: number) =>
  `${value.toFixed(value < min && Number(value.toFixed(2)) >= min ? 3 : 2)}×`

/**
 * #44 item 5, the targets table: each target, its same-round ratio (median and the rounds' min –
 * max), the target, the verdict, and how much of a core other processes took meanwhile (a verdict
 * reached while they took more than DISTURBED is marked "on a busy machine"). Empty without verdicts.
 */
export function targetsTable(input: ReportInput, verdicts: Verdict[]): string {
  const scenarioLabel = (id: string) => input.scenarios.find((s) => s.id === id)?.label ?? id
  const lines = [
    '| #44 target | scenario | same-round ratio (median) | per round, min – max | rounds | target | verdict | other processes | notes |',
    '|---|---|--:|--:|--:|--:|---|---|---|',
  ]
  for (const v of verdicts) {
    const busy = v.busy && v.busy.rounds > 0
    const measured = v.ratio !== undefined
    const cells = [
      v.target.what,
      scenarioLabel(v.target.scenario),
      measured ? targetRatio(v.ratio as number, v.target.min) : '–',
      measured ? `${(v.low as number).toFixed(2)} – ${(v.high as number).toFixed(2)}` : '–',
      String(v.rounds),
      `≥ ${v.target.min.toFixed(2)}×`,
      measured ? `${v.status === 'met' ? 'met' : '**not met**'}${busy ? ', on a busy machine' : ''}` : v.status,
      !measured
        ? '–'
        : !v.busy
          ? 'not watched (no CPU pinning)'
          : busy
            ? `> ${Math.round(DISTURBED * 100)}% of a core in ${v.busy.rounds} of ${v.rounds} round(s), up to ${Math.round(v.busy.worst * 100)}%`
            : `≤ ${Math.round(DISTURBED * 100)}% of a core`,
      [...new Set(v.notes)].join('; '),
    ]
    lines.push(`| ${cells.join(' | ')} |`)
  }
  return verdicts.length ? lines.join('\n') : ''
}

/** One line on the verdicts, e.g. "9 target(s): 6 met, 1 not met, 2 skipped, 0 without a figure; 3 judged on a busy machine". */
export function targetSummary(verdicts: Verdict[]): string {
  const count = (status: TargetStatus) => verdicts.filter((v) => v.status === status).length
  const parts = [
    `${count('met')} met`,
    `${count('not met')} not met`,
    `${count('skipped')} skipped`,
    `${count('no figure')} without a figure`,
  ]
  const busy = verdicts.filter((v) => v.busy && v.busy.rounds > 0).length
  return `${verdicts.length} target(s): ${parts.join(', ')}${busy ? `; ${busy} judged on a busy machine` : ''}`
}

/**
 * What `--check` fails on: a target not met, or one without a figure although its cells ran. A
 * skipped target (the environment lacks a store or a Node ≥ 22.5) is no failure.
 */
export function failedTargets(verdicts: Verdict[]): Verdict[] {
  return verdicts.filter((v) => v.status === 'not met' || v.status === 'no figure')
}

/** The main table: one row per scenario and server. */
export function mainTable(input: ReportInput): string {
  const lines = [
    '| scenario | server | req/s | p50 ms | p99 ms | peak RSS MB | notes |',
    '|---|---|--:|--:|--:|--:|---|',
  ]
  for (const scenario of input.scenarios) {
    for (const server of input.servers) {
      const cell = findCell(input, scenario.id, server.id)
      if (!cell) continue
      const s = summarize(cell)
      const row = s ? [int(s.rps), ms(s.p50), ms(s.p99), mb(s.peakRss)] : ['–', '–', '–', '–']
      lines.push(`| ${scenario.label} | ${server.label} | ${row.join(' | ')} | ${cellNotes(cell).join('; ')} |`)
    }
  }
  return lines.join('\n')
}

/** Gatehouse's throughput relative to node-oidc-provider and to the ceilings. */
export function ratioTable(input: ReportInput): string {
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  const head = [
    'scenario',
    'Gatehouse on',
    'req/s',
    `÷ ${label(input.peer)}`,
    ...(input.storePeers ? ['÷ node-oidc-provider on the same store'] : []),
    ...input.ceilings.map((c) => `÷ ${label(c)}`),
  ]
  const lines = [
    `| ${head.join(' | ')} |`,
    `|---|---|${head
      .slice(2)
      .map(() => '--:')
      .join('|')}|`,
  ]
  const rps = (scenario: string, server: string) => {
    const cell = findCell(input, scenario, server)
    return cell ? summarize(cell)?.rps : undefined
  }
  for (const scenario of input.scenarios) {
    for (const server of input.gatehouse) {
      const own = rps(scenario.id, server)
      if (own === undefined) continue
      const peer = rps(scenario.id, input.peer)
      const storePeer = input.storePeers?.[server]
      const sameStore = input.storePeers ? [ratio(own, storePeer ? rps(scenario.id, storePeer) : undefined)] : []
      const ceilings = input.ceilings.map((c) => ratio(own, rps(scenario.id, c)))
      if (peer === undefined && ceilings.every((c) => c === '–')) continue
      const cells = [int(own), ratio(own, peer), ...sameStore, ...ceilings]
      lines.push(`| ${scenario.label} | ${label(server)} | ${cells.join(' | ')} |`)
    }
  }
  return lines.join('\n')
}

/** Node bridges on a trivial handler: requests/s, latencies and the share of bare node:http kept. */
export function bridgeTable(input: ReportInput): string {
  const bridges = input.bridges
  if (!bridges) return ''
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  const bare = findCell(input, bridges.scenario, bridges.bare)
  const bareRps = bare ? summarize(bare)?.rps : undefined
  const lines = ['| Node bridge | req/s | p50 ms | p99 ms | ÷ bare node:http |', '|---|--:|--:|--:|--:|']
  for (const server of [bridges.bare, ...bridges.servers]) {
    const cell = findCell(input, bridges.scenario, server)
    const s = cell ? summarize(cell) : undefined
    if (!s) continue
    lines.push(`| ${label(server)} | ${int(s.rps)} | ${ms(s.p50)} | ${ms(s.p99)} | ${ratio(s.rps, bareRps)} |`)
  }
  return lines.length > 2 ? lines.join('\n') : ''
}

/**
 * What DPoP costs per request: plain req/s ÷ DPoP req/s on the same server (a request's CPU cost,
 * each server being pinned to one core), so 1.50× means DPoP costs half a plain request more.
 */
export function dpopTable(input: ReportInput): string {
  const dpop = input.dpop
  if (!dpop) return ''
  const rps = (scenario: string, server: string) => {
    const cell = findCell(input, scenario, server)
    return cell ? summarize(cell)?.rps : undefined
  }
  const lines = ['| proof | server | plain req/s | DPoP req/s | cost ÷ plain |', '|---|---|--:|--:|--:|']
  for (const scenario of input.scenarios.filter((s) => dpop.scenarios.includes(s.id))) {
    for (const server of input.servers) {
      const own = rps(scenario.id, server.id)
      const plain = rps(dpop.plain, dpop.plainOf?.[server.id] ?? server.id)
      if (own === undefined || plain === undefined) continue
      lines.push(`| ${scenario.label} | ${server.label} | ${int(plain)} | ${int(own)} | ${ratio(plain, own)} |`)
    }
  }
  return lines.length > 2 ? lines.join('\n') : ''
}

/**
 * CPU per request in the measured window: the server process and the database's processes, for
 * the stateful scenarios: what a shared store costs, against the same server in memory and the peer.
 */
export function cpuTable(input: ReportInput, scenarios: string[], servers: string[]): string {
  const lines = [
    '| scenario | server | req/s | server CPU µs/req | database CPU µs/req | total µs/req |',
    '|---|---|--:|--:|--:|--:|',
  ]
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  for (const scenario of input.scenarios.filter((s) => scenarios.includes(s.id))) {
    for (const server of servers) {
      const cell = findCell(input, scenario.id, server)
      const cpu = cpuPerRequest(cell)
      if (!cpu) continue
      const own = cpu.server
      // NaN: the store lives in the server process (SQLite, D1 in workerd), its CPU in the server's.
      const store = cpu.store
      const rps = median(cell?.samples.filter((x) => x.cpu && !x.exhausted && x.requests > 0).map((x) => x.rps) ?? [])
      lines.push(
        `| ${scenario.label} | ${label(server)} | ${int(rps)} | ${int(own)} | ${Number.isFinite(store) ? int(store) : 'in the server'} | ${int(own + (Number.isFinite(store) ? store : 0))} |`,
      )
    }
  }
  return lines.length > 2 ? lines.join('\n') : ''
}

/** Introspection cost against store size, and the memory each seeded refresh token takes. */
export function storeTable(input: ReportInput): string {
  const lines = [
    '| refresh tokens in store | req/s | p50 ms | p99 ms | RSS before → after seeding MB | RSS per token B | heap per token B | seeding s |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|',
  ]
  for (const { scenario, tokens } of input.stores) {
    const cell = findCell(input, scenario, input.storeServer)
    const s = cell && summarize(cell)
    const ready = cell?.samples.map((sample) => sample.ready) ?? []
    const pick = (key: string) => median(ready.map((r) => Number(r[key])))
    const rssBefore = pick('rssBefore')
    const rssAfter = pick('rssAfter')
    // A few thousand tokens move RSS by less than its noise: per-token figures only from 100,000.
    const per = (after: string, before: string) =>
      tokens < 100_000 ? Number.NaN : median(ready.map((r) => (Number(r[after]) - Number(r[before])) / tokens))
    const perToken = per('rssAfter', 'rssBefore')
    const heapPerToken = per('heapAfter', 'heapBefore')
    lines.push(
      `| ${int(tokens)} | ${s ? int(s.rps) : '–'} | ${s ? ms(s.p50) : '–'} | ${s ? ms(s.p99) : '–'} | ${mb(rssBefore)} → ${mb(rssAfter)} | ${int(perToken)} | ${int(heapPerToken)} | ${Number.isFinite(pick('seedSeconds')) ? pick('seedSeconds').toFixed(1) : '–'} |`,
    )
  }
  return lines.join('\n')
}

/** Sign-in flows: flows/s, latency of a whole flow, HTTP requests per flow, against the peer. */
export function signinTable(input: ReportInput, scenario: string): string {
  const label = (id: string) => input.servers.find((s) => s.id === id)?.label ?? id
  const peerCell = findCell(input, scenario, input.peer)
  const peer = peerCell ? summarize(peerCell)?.rps : undefined
  const lines = [
    '| server | flows/s | p50 ms per flow | p99 ms per flow | HTTP requests per flow | failed flows | ÷ node-oidc-provider |',
    '|---|--:|--:|--:|--:|--:|--:|',
  ]
  for (const server of input.servers) {
    const cell = findCell(input, scenario, server.id)
    const s = cell ? summarize(cell) : undefined
    if (!cell || !s) continue
    const steps = median(cell.samples.map((x) => Number(x.stepsPerFlow)))
    lines.push(
      `| ${label(server.id)} | ${s.rps.toFixed(1)} | ${ms(s.p50)} | ${ms(s.p99)} | ${Number.isFinite(steps) ? steps : '–'} | ${s.non2xx} | ${server.id === input.peer ? '1.00×' : ratio(s.rps, peer)} |`,
    )
  }
  return lines.length > 2 ? lines.join('\n') : ''
}

/** One cold-start cell: a runtime, a code path and a store, N starts (medians over all rounds). */
export interface ColdCell {
  id: string
  label: string
  path: string
  storeLabel: string
  starts: ColdStart[]
  notes: string[]
}

/** Cold starts: median time from spawn to the first 200, and where it went. */
export function coldTable(cells: ColdCell[], perRound: number): string {
  const lines = [
    '| server | code path | store | spawn → first 200 ms (median) | min – max ms | spawn → READY ms | READY → first 200 ms | in process: imported / ready / listening ms | starts | notes |',
    '|---|---|---|--:|--:|--:|--:|--:|--:|---|',
  ]
  const round = (n: number) => (Number.isFinite(n) ? String(Math.round(n)) : '–')
  for (const cell of cells) {
    const starts = cell.starts
    const totals = starts.map((x) => x.total)
    const mark = (name: string) => round(median(starts.map((x) => Number(x.marks[name]))))
    const row = starts.length
      ? [
          round(median(totals)),
          `${round(Math.min(...totals))} – ${round(Math.max(...totals))}`,
          // No READY line (start:workers): `ready` is NaN, null once through JSON.
          round(median(starts.map((x) => x.ready ?? Number.NaN))),
          round(median(starts.map((x) => x.total - (x.ready ?? Number.NaN)))),
          `${mark('imported')} / ${mark('ready')} / ${mark('listening')}`,
          String(starts.length),
        ]
      : ['–', '–', '–', '–', '–', '0']
    lines.push(
      `| ${cell.label} | ${cell.path} | ${cell.storeLabel} | ${row.join(' | ')} | ${[...new Set(cell.notes)].join('; ')} |`,
    )
  }
  if (perRound <= 0) return ''
  return lines.length > 2 ? lines.join('\n') : ''
}

/** One store-size cell: a store, a record kind and a count. */
export interface SizeCell {
  id: string
  store: 'memory' | 'postgres' | 'redis'
  record: 'refresh_token' | 'session'
  count: number
  result?: SizeResult
  notes: string[]
}

/** Bytes per stored record, measured as each store reports its own size. */
export function sizeTable(cells: SizeCell[]): string {
  const lines = [
    '| store | record | records | measured as | before → after MB | bytes per record | second measure | seeding | seeding s | notes |',
    '|---|---|--:|---|--:|--:|---|---|--:|---|',
  ]
  const storeLabel = { memory: 'memory (Node)', postgres: 'PostgreSQL', redis: 'Redis' }
  for (const cell of cells) {
    const r = cell.result
    const row = r
      ? [
          r.measure,
          `${mb(r.bytesBefore)} → ${mb(r.bytesAfter)}`,
          int(r.bytesPerRecord),
          r.second ? `${r.second.name}: ${int(r.second.bytesPerRecord)} B` : '–',
          r.method,
          `${r.seedSeconds.toFixed(1)} (${int(r.count / r.seedSeconds)}/s)`,
        ]
      : ['–', '–', '–', '–', '–', '–']
    lines.push(
      `| ${storeLabel[cell.store]} | ${cell.record === 'session' ? 'session' : 'refresh token'} | ${int(cell.count)} | ${row.join(' | ')} | ${[...new Set(cell.notes)].join('; ')} |`,
    )
  }
  return lines.length > 2 ? lines.join('\n') : ''
}
