/**
 * @module endpoints/grants_page
 * The end-user's grants page (#42 item 3), GET and POST at the `grantsPage` path below the issuer
 * (off by default). GET lists the live grants of the browser's session's end-user; the Revoke
 * button POSTs `action=revoke` and gets a confirmation page, whose `action=confirm` with
 * `decision=revoke` revokes the grant (every token of it dead at once: protocol/grant_management)
 * and redirects (303) back to the list. Checks on every POST, in order:
 * - the form comes from the page itself: an `Origin` of another origin (`null` aside: the pages send
 *   no referrer, so browsers send `Origin: null`) or a `Sec-Fetch-Site` other than `same-origin`
 *   and `none` is refused (403)
 * - the browser has a live session (else the sign-in-first page, 403)
 * - `csrf` is the session's token: the SHA-256 of a label and the session's store id, itself the
 *   SHA-256 of the secret cookie (403 otherwise)
 * - `grant_id` names a live grant of the session's end-user; an unknown, ended or another
 *   end-user's grant all get the same "no longer there" page (404), so nothing is revealed
 * Without a session, GET shows a page asking to sign in first (no redirect: the built-in sign-in
 * belongs to an authorization request), with a link to `grantsPage.signInUrl` when set.
 */
import type { Context } from '../context.ts'
import { timingSafeEqual } from '../crypto/index.ts'
import { readForm } from '../http.ts'
import { loadSession } from '../interaction/index.ts'
import {
  type GrantEntry,
  errorPage,
  grantGonePage,
  grantsListPage,
  grantsSignInPage,
  revokeConfirmPage,
} from '../pages/index.ts'
import { type GrantView, describeAuthorizationDetails, findGrant, listGrants, revokeGrant } from '../protocol/index.ts'
import { metaOf } from '../security/index.ts'
import type { SessionRecord } from '../storage/index.ts'

/** What the CSRF token hashes before the session's store id (another use of that id gets another hash). */
const CSRF_LABEL = 'gatehouse grants page csrf\n'

/** A grant id as the stores make them; anything else is not looked up. */
const GRANT_ID = /^[\w-]{1,200}$/

/** The session's CSRF token: bound to it, secret as it is, and stable for the session's life. */
async function csrfOf(session: SessionRecord, ctx: Context): Promise<string> {
  return ctx.sha256(CSRF_LABEL + session.id)
}

/** The page's absolute URL (from the issuer, never from the request). */
function pageUrl(ctx: Context): string {
  const base = ctx.config.issuer.endsWith('/') ? ctx.config.issuer.slice(0, -1) : ctx.config.issuer
  return base + (ctx.config.grantsPage?.path ?? '')
}

/** A grant as the page shows it: the consent page's descriptions of its authorization details. */
function entryOf(view: GrantView, ctx: Context): GrantEntry {
  return {
    id: view.id,
    client: view.client,
    scopes: view.scopes,
    resources: view.resources,
    claims: [...new Set([...(view.claims?.userinfo ?? []), ...(view.claims?.id_token ?? [])])],
    authorizationDetails: describeAuthorizationDetails(view.authorizationDetails ?? [], ctx),
    kind: view.kind,
    createdAt: view.createdAt,
    ...(view.lastUsedAt !== undefined ? { lastUsedAt: view.lastUsedAt } : {}),
  }
}

/** 303 See Other to `location` (after a POST, the browser GETs it). */
function seeOther(location: string): Response {
  return new Response(null, { status: 303, headers: { location, 'cache-control': 'no-store' } })
}

/** Whether the POST was sent from another origin than the page's (a cross-site form, a sibling site). */
function isForeign(request: Request, ctx: Context): boolean {
  const origin = request.headers.get('origin')
  if (origin !== null && origin !== 'null' && origin !== new URL(ctx.config.issuer).origin) return true
  const site = request.headers.get('sec-fetch-site')
  return site !== null && site !== 'same-origin' && site !== 'none'
}

/** The end-user's consents to `clientId` remembered in this session are forgotten: it asks again. */
async function forgetConsent(session: SessionRecord, clientId: string, ctx: Context): Promise<void> {
  const { [clientId]: _scopes, ...consents } = session.consents
  const { [clientId]: _claims, ...claimConsents } = session.claimConsents ?? {}
  await ctx.store.sessions.put({ ...session, consents, ...(session.claimConsents ? { claimConsents } : {}) })
}

/** GET: the list of the session's end-user's grants. */
async function showList(request: Request, session: SessionRecord, ctx: Context): Promise<Response> {
  const grants = await listGrants(session.sub, ctx)
  return grantsListPage(ctx.config.theme, {
    action: pageUrl(ctx),
    csrf: await csrfOf(session, ctx),
    grants: grants.map((grant) => entryOf(grant, ctx)),
    revoked: new URL(request.url).searchParams.get('revoked') === '1',
  })
}

/** POST: the confirmation (`action=revoke`) or the revoke itself (`action=confirm`). */
async function submit(request: Request, ctx: Context): Promise<Response> {
  const theme = ctx.config.theme
  if (isForeign(request, ctx)) {
    return errorPage(theme, 'invalid_request', 'the form was sent from another site', 403)
  }
  const form = await readForm(request, ctx.config.limits)
  const { session } = await loadSession(request, ctx)
  const signInUrl = ctx.config.grantsPage?.signInUrl
  if (!session) return grantsSignInPage(theme, { ...(signInUrl !== undefined ? { signInUrl } : {}), status: 403 })
  const csrf = await csrfOf(session, ctx)
  if (!timingSafeEqual(form.get('csrf') ?? '', csrf)) {
    return errorPage(theme, 'invalid_request', 'the form could not be verified; open the page again and retry', 403)
  }
  const action = form.get('action')
  if (action !== 'revoke' && action !== 'confirm') return errorPage(theme, 'invalid_request', 'unknown action')
  const url = pageUrl(ctx)
  if (action === 'confirm' && form.get('decision') !== 'revoke') return seeOther(url)
  const id = form.get('grant_id') ?? ''
  const view = GRANT_ID.test(id) ? await findGrant(id, ctx) : undefined
  // An unknown, ended or another end-user's grant: the same page, nothing about it revealed.
  if (!view || view.sub !== session.sub) return grantGonePage(theme, { back: url })
  if (action === 'revoke') return revokeConfirmPage(theme, { action: url, csrf, grant: entryOf(view, ctx) })
  const owner = { sub: session.sub }
  if (!(await revokeGrant(id, ctx, { by: 'user', meta: metaOf(request), owner }))) {
    return grantGonePage(theme, { back: url })
  }
  await forgetConsent(session, view.client.id, ctx)
  return seeOther(`${url}?revoked=1`)
}

/** GET (HEAD) and POST at the grants page's path. */
export async function handleGrantsPage(request: Request, ctx: Context): Promise<Response> {
  if (request.method === 'POST') return submit(request, ctx)
  const { session } = await loadSession(request, ctx)
  if (session) return showList(request, session, ctx)
  const signInUrl = ctx.config.grantsPage?.signInUrl
  return grantsSignInPage(ctx.config.theme, signInUrl !== undefined ? { signInUrl } : {})
}
