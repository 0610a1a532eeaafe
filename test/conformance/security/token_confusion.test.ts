/**
 * #39 item 8: token confusion as a test. Every kind of token the service issues or receives
 * (rows, each issued to the acting client `alpha` — "same" — and to another client `beta` —
 * "other") is offered at every place that accepts a token (columns), acting as `alpha`; only the
 * pairs in `ACCEPTED` may be accepted, every other cell must be refused with the place's RFC
 * error. The rules are docs/security.md#threat-model-per-grant (per grant) and
 * #token-accepting-places (per place); the fixtures (minting, places) are in
 * token_confusion_fixtures.ts. Runs on memory, and on PostgreSQL / Redis / SQLite where available.
 *
 * A new kind of token is a row: a name in `KINDS`, its `mint` case, and its accepted places
 * below. A new place is a column: a name in `PLACES`, its `runPlace` case and `REFUSALS` entry,
 * and the rows it accepts below. Every cell is one test named "<kind>(<side>) at <place> → <outcome>".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import {
  KINDS,
  type Kind,
  type MatrixCtx,
  type Minted,
  PLACES,
  type Place,
  SINGLE_USE,
  type Side,
  matrixSetup,
  mint,
  refusedAsSpecified,
  runPlace,
  signInMain,
} from './token_confusion_fixtures.ts'

type Row = `${Kind}(${Side})`

/**
 * The matrix as data: the (kind, side) pairs each place accepts; every other cell is refused.
 * The anchors are the sections of docs/security.md that state each rule.
 */
const ACCEPTED: Record<Place, readonly Row[]> = {
  // #45 (#id-jags-identity-provider-side): an ID-JAG this service issued (`issued_id_jag`) is accepted at
  // no place here: it is a grant for another authorization server, never an access token, ID token
  // or subject token of this one.
  // #threat-model-per-grant, token exchange: a user's active access token issued to any client
  // (delegation); a client credentials token only of the exchanging client; a DPoP-bound one only
  // with a proof of its key.
  'subject_token(access_token)': [
    'access_token(same)',
    'access_token(other)',
    'access_token_dpop(same)',
    'client_credentials_token(same)',
    'grant_management_token(same)',
    'exchanged_token(same)',
    'exchanged_token(other)',
  ],
  // #threat-model-per-grant: only an ID token issued to the exchanging client (grant and session alive).
  'subject_token(id_token)': ['id_token(same)'],
  // #threat-model-per-grant: the actor token is the exchanging client's own.
  'actor_token(access_token)': [
    'access_token(same)',
    'access_token_dpop(same)',
    'client_credentials_token(same)',
    'grant_management_token(same)',
    'exchanged_token(same)',
  ],
  'actor_token(id_token)': ['id_token(same)'],
  // #token-accepting-places (all below): ID tokens only; at authorize a hint names the end-user,
  // whichever client it was issued to.
  'id_token_hint@authorize': ['id_token(same)', 'id_token(other)'],
  // At logout the hint's audience must be the client_id sent.
  'id_token_hint@logout': ['id_token(same)'],
  // At the CIBA endpoint the hint must have been issued to the requesting client.
  'id_token_hint@ciba': ['id_token(same)'],
  // Access tokens with `openid`, whoever holds them; DPoP-bound ones only with a proof of their key.
  'userinfo(Bearer)': ['access_token(same)', 'access_token(other)', 'exchanged_token(same)', 'exchanged_token(other)'],
  'userinfo(DPoP)': ['access_token_dpop(same)'],
  // The caller's own access and refresh tokens (RFC 7662 §2.1, RFC 7009 §2.1).
  introspection: [
    'access_token(same)',
    'access_token_dpop(same)',
    'client_credentials_token(same)',
    'grant_management_token(same)',
    'exchanged_token(same)',
    'refresh_token(same)',
  ],
  revocation: [
    'access_token(same)',
    'access_token_dpop(same)',
    'client_credentials_token(same)',
    'grant_management_token(same)',
    'exchanged_token(same)',
    'refresh_token(same)',
  ],
  // Each of the rest: only its own kind, issued to (made by) the same client.
  client_assertion: ['client_assertion(same)'],
  DPoP: ['dpop_proof(same)'],
  // Request objects are not supported (request_not_supported, `request_parameter_supported: false`):
  // when they are, 'request_object(same)' joins here.
  request: [],
  request_uri: ['request_uri(same)'],
  refresh_token: ['refresh_token(same)'],
  code: ['authorization_code(same)'],
  device_code: ['device_code(same)'],
  auth_req_id: ['auth_req_id(same)'],
  registration_management: ['registration_access_token(same)'],
  // #42 item 4, Grant Management §6.1: only the acting client's own client credentials token with
  // the action's scope (grant_management_query / _revoke), for its own grant; never a token a user
  // granted (nor one exchanged from it), another client's, or one without the scope.
  'grant_management(GET)': ['grant_management_token(same)'],
  'grant_management(DELETE)': ['grant_management_token(same)'],
  // #45, docs/security.md "Identity assertion grants": only an ID-JAG of a trusted identity
  // provider, typed oauth-id-jag+jwt, for this server and for the presenting client; never an ID
  // token, logout token, access token, client assertion, an ID-JAG of another client, typed plain
  // JWT or for another authorization server.
  'assertion(jwt-bearer)': ['id_jag(same)'],
}

const ROWS: Array<{ kind: Kind; side: Side; row: Row }> = KINDS.flatMap((kind) =>
  (['same', 'other'] as const).map((side) => ({ kind, side, row: `${kind}(${side})` as Row })),
)

/** A row or column in ACCEPTED that the matrix does not have is a typo, not a refusal. */
for (const [place, rows] of Object.entries(ACCEPTED)) {
  for (const row of rows) {
    if (!ROWS.some((r) => r.row === row)) throw new Error(`ACCEPTED['${place}'] names an unknown row ${row}`)
  }
}

describe.each(STORES)(
  '#39 item 8 token confusion matrix, docs/security.md#threat-model-per-grant ($name store)',
  (store) => {
    let opened: TestStore | undefined
    let ctx: MatrixCtx
    const shared = new Map<Row, Minted>()

    beforeAll(async () => {
      const time = clock(Math.floor(Date.now() / 1000))
      opened = await store.create(time.now)
      ctx = await matrixSetup(opened.store, time)
      await signInMain(ctx)
      const party = (side: Side) => (side === 'same' ? ctx.alpha : ctx.beta)
      const [alphaAt, betaAt] = await Promise.all([
        mint(ctx, 'access_token', ctx.alpha),
        mint(ctx, 'access_token', ctx.beta),
      ])
      shared.set('access_token(same)', alphaAt)
      shared.set('access_token(other)', betaAt)
      ctx.userAccessToken = { alpha: alphaAt.value, beta: betaAt.value }
      const rest = ROWS.filter(({ kind, row }) => !SINGLE_USE.has(kind) && !shared.has(row))
      const minted = await Promise.all(rest.map(({ kind, side }) => mint(ctx, kind, party(side))))
      for (const [index, { row }] of rest.entries()) shared.set(row, minted[index] as Minted)
      ctx.twins = {
        alpha: shared.get('registration_access_token(same)')?.dynamicClientId as string,
        beta: shared.get('registration_access_token(other)')?.dynamicClientId as string,
      }
    })

    afterAll(async () => {
      await opened?.dispose()
    })

    for (const place of PLACES) {
      for (const { kind, side, row } of ROWS) {
        const expected = ACCEPTED[place].includes(row) ? 'accepted' : 'refused'
        it.concurrent(`#39 item 8 ${row} at ${place} → ${expected}`, async () => {
          // Used up by their accepted use, or revoked here: a cell of its own.
          const fresh = SINGLE_USE.has(kind) || place === 'revocation'
          const token = fresh ? await mint(ctx, kind, side === 'same' ? ctx.alpha : ctx.beta) : shared.get(row)
          if (!token) throw new Error(`nothing minted for ${row}`)
          const outcome = await runPlace(ctx, place, token, ctx.alpha)
          expect(outcome.accepted ? 'accepted' : 'refused', outcome.detail).toBe(expected)
          if (!outcome.accepted) expect(refusedAsSpecified(place, outcome), `refused as ${outcome.detail}`).toBe(true)
        })
      }
    }
  },
)
