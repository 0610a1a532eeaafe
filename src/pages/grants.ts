/**
 * @module pages/grants
 * The end-user's grants page (#42 item 3): the apps and agents with access to their account, each
 * with what it may do in the consent page's words (scopes, resources, authorization details,
 * claims), when it was granted and last used and how, and a Revoke button; the confirmation before
 * a revoke; the page for a grant that is no longer there; and the page asking to sign in first.
 * Client names, hosts and resources are bidi-isolated (`<bdi>`), every value escaped. Forms are
 * plain POSTs (no script): fields `csrf`, `grant_id`, `action` (`revoke`, `confirm`), `decision`.
 */
import type { Theme } from './theme.ts'
import { escapeHtml as e } from '../http.ts'
import { authorizationDetailItems, type DetailView } from './authorization_details.ts'
import { scopeItems } from './consent.ts'
import { CHECK_ICON, type PageTexts, hidden, isolated, page, textsOf, withClient } from './layout.ts'

/** One grant as the page shows it. */
export interface GrantEntry {
  id: string
  client: { id: string; name: string; host?: string; selfRegistered: boolean; deleted?: true }
  scopes: readonly string[]
  resources: readonly string[]
  /** Claim names requested on their own (Core §5.5), userinfo and ID token together. */
  claims: readonly string[]
  authorizationDetails: readonly DetailView[]
  kind: 'authorization_code' | 'device_code' | 'ciba' | 'jwt_bearer'
  createdAt: number
  lastUsedAt?: number
}

export interface GrantsPageInput {
  /** Where the forms post (the page's own URL). */
  action: string
  csrf: string
  grants: readonly GrantEntry[]
  /** Shows that a grant was just revoked. */
  revoked?: boolean
}

/** A time as the page's language writes it (UTC), in a `<time>` element; ISO when Intl cannot. */
function time(theme: Theme, at: number, withTime: boolean): string {
  const date = new Date(at * 1000)
  let text: string
  try {
    text = new Intl.DateTimeFormat(theme.lang ?? 'en', {
      dateStyle: 'medium',
      ...(withTime ? { timeStyle: 'short' } : {}),
      timeZone: 'UTC',
    }).format(date)
    if (withTime) text += ' UTC'
  } catch {
    text = date
      .toISOString()
      .slice(0, withTime ? 16 : 10)
      .replace('T', ' ')
  }
  return `<time datetime="${e(date.toISOString())}">${e(text)}</time>`
}

const KIND_TEXT = {
  authorization_code: 'grantsKindCode',
  device_code: 'grantsKindDevice',
  ciba: 'grantsKindCiba',
  jwt_bearer: 'grantsKindIdentityAssertion',
} as const satisfies Record<GrantEntry['kind'], keyof PageTexts>

/** What the grant lets the client do: scopes, authorization details, claims and resources. */
function permissions(t: PageTexts, grant: GrantEntry): string {
  const claims = grant.claims
    .map(
      (claim) =>
        `<li data-claim="${e(claim)}">${CHECK_ICON}<span>${e(t.grantsClaim)} <code>${e(claim)}</code></span></li>`,
    )
    .join('')
  const resources = grant.resources
    .map((resource) => {
      const text = e(t.grantsResource).replaceAll('{resource}', () => isolated(resource))
      return `<li data-resource="${e(resource)}">${CHECK_ICON}<span>${text}</span></li>`
    })
    .join('')
  const items = scopeItems(grant.scopes) + authorizationDetailItems(grant.authorizationDetails) + claims + resources
  return items === '' ? '' : `<p class="may">${e(t.grantsMay)}</p><ul class="scopes">${items}</ul>`
}

/** One grant's card: its client, what it may do, when and how, and its Revoke form. */
function grantItem(theme: Theme, t: PageTexts, input: GrantsPageInput, grant: GrantEntry, index: number): string {
  const name = `grant-${index}`
  const { client } = grant
  const host = client.host === undefined ? '' : `<span class="grant-host"><bdi>${e(client.host)}</bdi></span>`
  const badges =
    (client.selfRegistered ? `<span class="badge">${e(t.grantsSelfRegistered)}</span>` : '') +
    (client.deleted ? `<span class="badge">${e(t.grantsClientGone)}</span>` : '')
  const lastUsed = grant.lastUsedAt === undefined ? e(t.grantsNotUsed) : time(theme, grant.lastUsedAt, true)
  const facts = `<dl class="facts"><dt>${e(t.grantsGranted)}</dt><dd>${time(theme, grant.createdAt, false)}</dd><dt>${e(t.grantsLastUsed)}</dt><dd>${lastUsed}</dd><dt>${e(t.grantsHow)}</dt><dd>${e(t[KIND_TEXT[grant.kind]])}</dd></dl>`
  const form = `<form method="post" action="${e(input.action)}">${hidden({ csrf: input.csrf, grant_id: grant.id, action: 'revoke' })}<button class="danger" type="submit" aria-describedby="${name}">${e(t.revokeButton)}</button></form>`
  return `<li class="grant" data-client-id="${e(client.id)}"><div class="grant-head"><h2 id="${name}"><bdi>${e(client.name)}</bdi></h2>${host}${badges}</div>${permissions(t, grant)}${facts}${form}</li>`
}

/** The list of the end-user's grants, newest first, or the empty state. */
export function grantsListPage(theme: Theme, input: GrantsPageInput): Response {
  const t = textsOf(theme)
  const notice = input.revoked
    ? `<p class="done" role="status">${CHECK_ICON}<span>${e(t.grantsRevokedNotice)}</span></p>`
    : ''
  const body =
    input.grants.length === 0
      ? `<p class="center grants-empty">${e(t.grantsEmpty)}</p>`
      : `<p class="lead">${e(t.grantsIntro)}</p><ul class="grants">${input.grants.map((grant, i) => grantItem(theme, t, input, grant, i)).join('')}</ul>`
  return page(theme, t.grantsTitle, notice + body)
}

export interface RevokeConfirmInput {
  action: string
  csrf: string
  grant: GrantEntry
}

/** The confirmation before a revoke: Revoke access first, Cancel second. */
export function revokeConfirmPage(theme: Theme, input: RevokeConfirmInput): Response {
  const t = textsOf(theme)
  const fields = hidden({ csrf: input.csrf, grant_id: input.grant.id, action: 'confirm' })
  return page(
    theme,
    t.revokeTitle,
    `<p id="revoke-question">${withClient(t.revokeQuestion, input.grant.client.name)}</p>
<form method="post" action="${e(input.action)}">${fields}
<div class="actions"><button class="destructive" type="submit" name="decision" value="revoke" aria-describedby="revoke-question">${e(t.revokeConfirmButton)}</button>
<button class="secondary" type="submit" name="decision" value="cancel" autofocus>${e(t.cancelButton)}</button></div></form>`,
  )
}

/** A grant that is unknown, another end-user's, revoked or ended: all look the same (404). */
export function grantGonePage(theme: Theme, input: { back: string }): Response {
  const t = textsOf(theme)
  return page(
    theme,
    t.grantGoneTitle,
    `<p class="center">${e(t.grantGoneMessage)}</p><div class="actions"><a class="button secondary" href="${e(input.back)}">${e(t.grantsBack)}</a></div>`,
    { status: 404 },
  )
}

/** For a browser without a session: sign in first (a link to the host's sign-in when configured). */
export function grantsSignInPage(theme: Theme, input: { signInUrl?: string; status?: number }): Response {
  const t = textsOf(theme)
  const link =
    input.signInUrl === undefined
      ? ''
      : `<div class="actions"><a class="button primary" href="${e(input.signInUrl)}">${e(t.signInButton)}</a></div>`
  return page(theme, t.grantsSignInTitle, `<p class="center">${e(t.grantsSignInMessage)}</p>${link}`, {
    status: input.status ?? 200,
  })
}
