/**
 * @module schema_issues
 * Valibot issues as the TypeErrors of bad options, registrations and configuration files show
 * them: `path: message` lines, and a cause that never carries the rejected input.
 */
import * as v from 'valibot'

/** Formats valibot issues as `path: message` lines. */
export function formatIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues.map((issue) => `${v.getDotPath(issue) ?? '(root)'}: ${issue.message}`).join('\n')
}

/**
 * Issues as paths and messages only: valibot's issues carry the rejected input, which may be a
 * secret or a password, and an error's cause tends to end up in logs.
 */
export function withoutInputs(issues: readonly v.BaseIssue<unknown>[]): Array<{ path: string; message: string }> {
  return issues.map((issue) => ({ path: v.getDotPath(issue) ?? '(root)', message: issue.message }))
}
