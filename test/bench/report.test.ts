/**
 * #43 item 5: the bench's table of one row against another from the same rounds (the Redis Cluster
 * against single-node Redis, the cluster with WAIT against without). bench/report.ts is pure: these
 * feed it samples and read the Markdown.
 */
import { describe, expect, it } from 'vitest'
import { type Cell, type ReportInput, type Sample, pairTable, sameRoundRatio } from '../../bench/report.ts'

const sample = (rps: number, round: number, extra: Partial<Sample> = {}): Sample => ({
  requests: rps * 10,
  rps,
  p50: 1,
  p99: 2,
  non2xx: 0,
  errors: 0,
  cpuSeconds: 1,
  peakRss: 100 * 1048576,
  ready: {},
  round,
  ...extra,
})

const cell = (scenario: string, server: string, samples: Sample[], notes: string[] = []): Cell => ({
  scenario,
  server,
  samples,
  notes,
})

const input = (cells: Cell[]): ReportInput => ({
  scenarios: [
    { id: 'authorization_code', label: 'code redemption (PKCE)' },
    { id: 'refresh_token', label: 'refresh (rotation)' },
    { id: 'client_credentials', label: 'client_credentials (ES256 JWT)' },
  ],
  servers: [
    { id: 'one', label: 'Gatehouse · Node · Redis' },
    { id: 'cluster', label: 'Gatehouse · Node · Redis Cluster' },
  ],
  cells,
  gatehouse: [],
  peer: 'oidc-provider',
  ceilings: [],
  stores: [],
  storeServer: 'gatehouse-node',
})

describe('#43 item 5 bench: ratios from the same round', () => {
  it('pairs the samples by round and takes the median of their ratios, not the ratio of the medians', () => {
    // Round 0 on a fast machine, round 1 on a slow one, round 2 in between: the medians of each row
    // (1000 and 600) give 0.60×, the same-round ratios 0.5, 0.6 and 0.75 give 0.60× too; with the
    // rounds shuffled against each other the two differ.
    const report = input([
      cell('authorization_code', 'one', [sample(2000, 0), sample(1000, 1), sample(800, 2)]),
      cell('authorization_code', 'cluster', [sample(1000, 0), sample(600, 1), sample(600, 2)]),
    ])
    expect(sameRoundRatio(report, 'authorization_code', 'cluster', 'one')).toEqual({ ratio: 0.6, rounds: 3 })
    const skewed = input([
      cell('refresh_token', 'one', [sample(2000, 0), sample(1000, 1), sample(1000, 2)]),
      cell('refresh_token', 'cluster', [sample(1800, 0), sample(900, 1), sample(500, 2)]),
    ])
    // medians 1000 and 900 → 0.90×; same round: 0.9, 0.9, 0.5 → 0.90; drop round 1 of the base:
    expect(sameRoundRatio(skewed, 'refresh_token', 'cluster', 'one')?.ratio).toBeCloseTo(0.9)
    skewed.cells[0]?.samples.splice(1, 1)
    const two = sameRoundRatio(skewed, 'refresh_token', 'cluster', 'one')
    expect(two?.ratio).toBeCloseTo(0.7)
    expect(two?.rounds).toBe(2)
  })

  it('leaves out invalid samples (codes ran out, no requests) and rounds only one row has', () => {
    const report = input([
      cell('authorization_code', 'one', [sample(1000, 0), sample(1000, 1), sample(1000, 2, { exhausted: true })]),
      cell('authorization_code', 'cluster', [sample(800, 0), sample(0, 1, { requests: 0 }), sample(100, 2)]),
    ])
    expect(sameRoundRatio(report, 'authorization_code', 'cluster', 'one')).toEqual({ ratio: 0.8, rounds: 1 })
    expect(sameRoundRatio(report, 'refresh_token', 'cluster', 'one')).toBeUndefined()
  })

  it('writes one line per scenario and pair: both req/s, the ratio of medians and the same-round ratio', () => {
    const report = input([
      cell('authorization_code', 'one', [sample(1500, 0), sample(1300, 1)]),
      cell('authorization_code', 'cluster', [sample(1200, 0), sample(650, 1)]),
      cell('refresh_token', 'one', [sample(1600, 0)]),
      cell('refresh_token', 'cluster', [sample(800, 0)]),
      cell('client_credentials', 'one', [sample(9000, 0)]),
      cell('client_credentials', 'cluster', [sample(9000, 0)]),
    ])
    const table = pairTable(report, ['authorization_code', 'refresh_token'], [{ server: 'cluster', base: 'one' }])
    expect(table.split('\n')).toEqual([
      '| scenario | server | req/s | against | its req/s | ÷, medians | ÷, same round (median) | rounds paired | notes |',
      '|---|---|--:|---|--:|--:|--:|--:|---|',
      // medians 925 and 1400 → 0.66×; same round 0.8 and 0.5 → 0.65×
      '| code redemption (PKCE) | Gatehouse · Node · Redis Cluster | 925 | Gatehouse · Node · Redis | 1,400 | 0.66× | 0.65× | 2 |  |',
      '| refresh (rotation) | Gatehouse · Node · Redis Cluster | 800 | Gatehouse · Node · Redis | 1,600 | 0.50× | 0.50× | 1 |  |',
    ])
  })

  it('says why a pair has no figure (skipped or failed row) instead of dropping it, and is empty without any cell', () => {
    const report = input([
      cell('authorization_code', 'one', [sample(1500, 0)]),
      cell('authorization_code', 'cluster', [], ['skipped: redis-server or redis-cli not found']),
      cell('refresh_token', 'one', [], ['skipped: REDIS_URL not set']),
      cell('refresh_token', 'cluster', [sample(700, 0)]),
    ])
    const table = pairTable(report, ['authorization_code', 'refresh_token'], [{ server: 'cluster', base: 'one' }])
    expect(table.split('\n').slice(2)).toEqual([
      '| code redemption (PKCE) | Gatehouse · Node · Redis Cluster | – | Gatehouse · Node · Redis | 1,500 | – | – | 0 | skipped: redis-server or redis-cli not found |',
      '| refresh (rotation) | Gatehouse · Node · Redis Cluster | 700 | Gatehouse · Node · Redis | – | – | – | 0 | Gatehouse · Node · Redis: skipped: REDIS_URL not set |',
    ])
    expect(pairTable(input([]), ['authorization_code'], [{ server: 'cluster', base: 'one' }])).toBe('')
  })
})
