/**
 * @module schema_issues
 * Valibot issues as the TypeErrors of bad options, registrations and configuration files show
 * them: `path: message` lines, and a cause that never carries the rejected input.
 */
import * as v from 'valibot'

/** Formats valibot issues as `path: message` lines (one per unknown key, at the key's path). */
export function formatIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return withoutInputs(issues)
    .map(({ path, message }) => `${path}: ${message}`)
    .join('\n')
}

/**
 * Issues as paths and messages only: valibot's issues carry the rejected input, which may be a
 * secret or a password, and an error's cause tends to end up in logs.
 */
export function withoutInputs(issues: readonly v.BaseIssue<unknown>[]): Array<{ path: string; message: string }> {
  return issues.flatMap((issue) => {
    const keys = UNKNOWN_KEYS.get(issue)
    if (!keys) return [{ path: pathOf(issue), message: issue.message }]
    // One entry per unknown key, at the key's own path.
    const parent = pathOf(issue)
    return keys.map(({ key, message }) => ({ path: parent === '(root)' ? key : `${parent}.${key}`, message }))
  })
}

/** Edit distance (insertions, deletions, substitutions, adjacent transpositions). */
function distance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) (rows[0] as number[])[j] = j
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[]
    const above = rows[i - 1] as number[]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((rows[i - 2] as number[])[j - 2] as number) + 1)
      }
    }
  }
  return (rows[a.length] as number[])[b.length] as number
}

/** The candidate `word` is most likely a typo of (case aside, or a few edits away), if any. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase()
  let best: { candidate: string; score: number } | undefined
  for (const candidate of candidates) {
    const score = distance(lower, candidate.toLowerCase())
    if (score <= Math.max(1, Math.floor(candidate.length / 4)) && (!best || score < best.score)) {
      best = { candidate, score }
    }
  }
  return best?.candidate
}

/** "unknown key `acessTokenTtl` (did you mean `accessTokenTtl`?)" */
function unknownKey(key: string, known: readonly string[]): string {
  const guess = closest(key, known)
  return `unknown key \`${key}\`${guess ? ` (did you mean \`${guess}\`?)` : ''}`
}

/** Each unknown-key issue's keys and their messages, for `withoutInputs` to give one path per key. */
const UNKNOWN_KEYS = new WeakMap<object, { key: string; message: string }[]>()

/**
 * `v.strictObject` whose unknown keys read as "unknown key `acessTokenTtl` (did you mean
 * `accessTokenTtl`?)", every one of the object's unknown keys in one issue (valibot reports the
 * first only), instead of `Invalid key: Expected never but received "acessTokenTtl"` (#27 item 13).
 * `formatIssues` and `withoutInputs` give each key its own line, at its own path.
 */
export function strictObject<const E extends v.ObjectEntries>(
  entries: E,
): v.StrictObjectSchema<E, v.ErrorMessage<v.StrictObjectIssue>> {
  const known = Object.keys(entries)
  return v.strictObject(entries, (issue) => {
    if (issue.expected !== 'never') return `Invalid type: Expected ${issue.expected} but received ${issue.received}`
    const object = issue.path?.[0]?.input
    const keys =
      object !== null && typeof object === 'object' && !Array.isArray(object)
        ? Object.keys(object).filter((key) => !Object.hasOwn(entries, key))
        : [String(issue.input)]
    const described = keys.map((key) => ({ key, message: unknownKey(key, known) }))
    UNKNOWN_KEYS.set(issue, described)
    return described.map((one) => one.message).join(', ')
  })
}

/** The issue's path; an unknown key's is its object's (the message names the keys). */
function pathOf(issue: v.BaseIssue<unknown>): string {
  const unknownKeys = issue.type === 'strict_object' && issue.expected === 'never' && issue.path !== undefined
  if (!unknownKeys) return v.getDotPath(issue) ?? '(root)'
  const parent = (issue.path as v.IssuePathItem[]).slice(0, -1).map((item) => String(item.key))
  return parent.length === 0 ? '(root)' : parent.join('.')
}
