/**
 * @module config/grants_page
 * The `grantsPage` option (#42 item 3): whether the end-user's page of the apps and agents with
 * access to their account is served, where below the issuer, and where its "sign in" link goes.
 */
import * as v from 'valibot'
import type { GrantsPageOptions } from './options.ts'

/** Where the page is served below the issuer unless `path` says otherwise. */
export const DEFAULT_GRANTS_PAGE_PATH = '/account/apps'

/** Path prefixes below the issuer that the service's own endpoints use (the page may not hide one). */
const RESERVED = ['/connect', '/.well-known']

/** A path below the issuer: `/` and segments of letters, digits, `-`, `.`, `_`, `~`; no `.`/`..` segment. */
const pagePath = v.pipe(
  v.string(),
  v.regex(/^(?:\/[\w\-.~]+)+$/, 'must be a path such as /account/apps (segments of letters, digits, -, ., _, ~)'),
  v.check(
    (path) => !path.split('/').some((segment) => segment === '.' || segment === '..'),
    'must not have . or .. segments',
  ),
  v.check(
    (path) => !RESERVED.some((prefix) => path === prefix || path.startsWith(`${prefix}/`)),
    'must not be /connect, /.well-known or below them (the service’s endpoints are there)',
  ),
)

/** An absolute http(s) URL without a fragment. */
const signInUrl = v.pipe(
  v.string(),
  v.url('must be an absolute URL'),
  v.check((url) => /^https?:\/\/[^#]*$/i.test(url), 'must be an http(s) URL without a fragment'),
)

/** The option as the service reads it: on with its path, or off (undefined). */
export interface GrantsPageConfig {
  /** Path below the issuer (`/account/apps` by default). */
  path: string
  /** Where the page's "Sign in" link goes when the browser has no session (absent: no link). */
  signInUrl?: string
}

/** The `grantsPage` option: `true`, `false` or `{ path?, signInUrl? }`, read as a `GrantsPageConfig` or off. */
export const GrantsPageSchema = v.pipe(
  v.union([v.boolean(), v.strictObject({ path: v.optional(pagePath), signInUrl: v.optional(signInUrl) })]),
  v.transform((value): GrantsPageConfig | undefined => {
    if (value === false) return undefined
    if (value === true) return { path: DEFAULT_GRANTS_PAGE_PATH }
    return {
      path: value.path ?? DEFAULT_GRANTS_PAGE_PATH,
      ...(value.signInUrl !== undefined ? { signInUrl: value.signInUrl } : {}),
    }
  }),
)
export type { GrantsPageOptions }
// The public GrantsPageOptions (src/config/options.ts) is written out; it must be what the schema accepts.
const _grantsPageMatches: [boolean | GrantsPageOptions] extends [v.InferInput<typeof GrantsPageSchema>]
  ? [v.InferInput<typeof GrantsPageSchema>] extends [boolean | GrantsPageOptions]
    ? true
    : false
  : false = true
void _grantsPageMatches
