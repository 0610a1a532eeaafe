/**
 * @module config/token_exchange
 * The `tokenExchange` option (RFC 8693 token exchange): the host's policy hook `authorize`, which
 * sees every exchange the built-in rules allow and may refuse it or narrow its scope and audience.
 */
import * as v from 'valibot'
import { OAuthError } from '../errors.ts'
import { strictObject } from '../schema_issues.ts'

/** RFC 8693 §3: the token types a subject or actor token may have (and the one issued). */
export const TokenTypes = {
  AccessToken: 'urn:ietf:params:oauth:token-type:access_token',
  IdToken: 'urn:ietf:params:oauth:token-type:id_token',
} as const

/** RFC 8693 §4.1 `act`: who acts (`sub`), and in `act` who acted before (the token claim). */
export interface TokenExchangeActor {
  sub: string
  act?: TokenExchangeActor
}

/** The subject or the actor of an exchange, as its token says. */
export interface TokenExchangeParty {
  /** The token's `sub`. */
  sub: string
  /** `access_token` or `id_token`. */
  tokenType: 'access_token' | 'id_token'
  /** The client the token was issued to (an access token's `client_id`, an ID token's `aud`). */
  clientId?: string
  /** The access token's scopes (an ID token has none). */
  scope?: string[]
  /** The delegation the token already carries (an exchanged access token's `act`). */
  act?: TokenExchangeActor
}

/**
 * What the `tokenExchange.authorize` hook is asked about: an exchange the built-in rules allow. An
 * ID-JAG request (#45) is one too: `requestedTokenType` `id-jag`, the subject the client's own ID
 * token, no `actor`, `act` the client, `audience` the target issuer alone and `resource` the one
 * the ID-JAG would name.
 */
export interface TokenExchangeRequest {
  /**
   * What is asked for: an access token of this service, or an ID-JAG for another authorization
   * server (#45; `identityAssertion.authorize` is asked after this hook).
   */
  requestedTokenType: 'access_token' | 'id-jag'
  /** The authenticated client asking for the exchange. */
  clientId: string
  /** Whom the new token is about (its `sub`). */
  subject: TokenExchangeParty
  /** The actor token's party, when one was sent. */
  actor?: TokenExchangeParty
  /** The new token's `act`: the actor token's `sub` (else the client id), nesting the subject's `act`. */
  act: TokenExchangeActor
  /** The scopes the new token would get. */
  scope: string[]
  /** The audiences (`aud`) the new token would get: for an ID-JAG, the target issuer. */
  audience: string[]
  /** An ID-JAG's `resource`, when the client named one (an access token's resources are in `audience`). */
  resource?: string
}

/**
 * The hook's answer: `true` (or nothing) allows the exchange as asked; `false` refuses it
 * (`invalid_request`, RFC 8693 §2.2.2: a token "unacceptable based on policy"); an object allows it
 * narrowed to the given `scope` and/or `audience` (only subsets count: anything else is dropped;
 * an audience left empty is `invalid_target`, a scope left empty `invalid_scope`).
 */
export type TokenExchangeDecision = boolean | undefined | { scope?: string[]; audience?: string[] }

/** Settings of the `tokenExchange` option. */
export interface TokenExchangeOptions {
  /**
   * The host's policy for token exchanges (e.g. only these agents may act for users): called for
   * every exchange after the built-in checks. Default: the built-in rules alone. A throwing hook
   * fails the request (500 `server_error`).
   */
  authorize?: (request: TokenExchangeRequest) => TokenExchangeDecision | Promise<TokenExchangeDecision>
  /**
   * The clients whose ID tokens an exchanging client may use as subject tokens, besides its own:
   * `{ agent: ['app'] }` lets `agent` exchange ID tokens issued to `app`. Default: none (#39 item
   * 1: ID tokens travel in front channels, so another client's is no credential). Even then the new
   * token carries no more than the grant behind the ID token: its scopes, resources and lifetime.
   */
  idTokenSubjects?: Record<string, string[]>
}

/** The schema of the `tokenExchange` option. */
export const TokenExchangeSchema = strictObject({
  authorize: v.optional(
    v.custom<NonNullable<TokenExchangeOptions['authorize']>>(
      (value) => typeof value === 'function',
      'must be a function (request) => boolean | { scope, audience }',
    ),
  ),
  idTokenSubjects: v.optional(
    v.record(v.pipe(v.string(), v.minLength(1)), v.array(v.pipe(v.string(), v.minLength(1)))),
  ),
})

/** What the new token gets once the host's policy has spoken. */
export interface Granted {
  scope: string[]
  audience: string[]
}

/**
 * Asks the host's hook (when there is one) about an exchange; returns the scope and audience to
 * issue. Checks: `false` refuses (invalid_request); narrowed values are intersected with the
 * proposed ones; an empty audience is invalid_target, an empty scope (of a non-empty one) invalid_scope.
 */
export async function applyExchangePolicy(
  options: TokenExchangeOptions | undefined,
  request: TokenExchangeRequest,
): Promise<Granted> {
  const proposed = { scope: request.scope, audience: request.audience }
  if (!options?.authorize) return proposed
  const decision = await options.authorize(request)
  if (decision === false) throw new OAuthError('invalid_request', 'the token exchange was refused by policy')
  if (decision === true || decision === undefined) return proposed
  const scope = decision.scope ? proposed.scope.filter((s) => decision.scope?.includes(s)) : proposed.scope
  const audience = decision.audience
    ? proposed.audience.filter((a) => decision.audience?.includes(a))
    : proposed.audience
  if (audience.length === 0)
    throw new OAuthError('invalid_target', 'no audience of the exchange is permitted by policy')
  if (scope.length === 0 && proposed.scope.length > 0) {
    throw new OAuthError('invalid_scope', 'no scope of the exchange is permitted by policy')
  }
  return { scope, audience }
}
