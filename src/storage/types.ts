/**
 * @module storage/types
 * The storage contract every adapter (memory, PostgreSQL, Redis, …) implements. All state of the
 * service goes through it; one-time use and rotation are atomic here, not in the callers.
 */
import type { ClientRecord } from './client_records.ts'
import type { CibaDecision, CibaPoll, CibaRequestRecord } from './ciba_records.ts'
import type { DeviceCodeRecord, DeviceDecision, DevicePoll } from './device_records.ts'
import type { AuthorizationDetail, GrantRecord, RequestedClaims } from './grant_records.ts'

export type { AuthorizationDetail, GrantRecord, RequestedClaims } from './grant_records.ts'
export {
  DEVICE_CODE_RETENTION,
  type DeviceCodeRecord,
  type DeviceDecision,
  type DevicePoll,
} from './device_records.ts'
export {
  CIBA_REQUEST_RETENTION,
  type CibaDecision,
  type CibaPoll,
  type CibaRequestRecord,
} from './ciba_records.ts'
export type {
  ClientMetadata,
  ClientRecord,
  PublicJwkSet,
  SecretRecord,
  SelfRegistration,
  TokenEndpointAuthMethod,
} from './client_records.ts'

/** Outcome of a one-time operation. Across concurrent callers, at most one sees `ok`. */
export type Consumed<T> =
  | { status: 'ok'; record: T } // this call consumed it
  | { status: 'replayed'; record: T } // consumed earlier: the caller revokes record.familyId
  | { status: 'missing' } // unknown or expired

/** Outcome of `codes.redeem` and `refreshTokens.rotateUnlessRevoked`: as `Consumed` (no record), or `revoked`. */
export type Redeemed = { status: 'ok' | 'replayed' | 'missing' | 'revoked' }

/** An authorization code, stored under the SHA-256 of its value. */
export interface CodeRecord {
  /** base64url SHA-256 of the code value. */
  id: string
  /** The grant (family) this code starts, or the grant it merges into or replaces; every token issued from it carries it. */
  familyId: string
  /** Grant Management §5.2: the code updates the live grant `familyId` when redeemed. */
  grantAction?: 'merge' | 'replace'
  clientId: string
  /** The redirect_uri of the authorization request, compared verbatim at redemption. */
  redirectUri: string
  /** Granted scopes, space-separated. */
  scope: string
  /** The end-user's subject. */
  sub: string
  /** The session (`sid`) the code was issued in. */
  sid?: string
  /** That session's store id (`SessionRecord.id`): the grant record keeps it (`GrantRecord.sessionId`). */
  sessionId?: string
  /** When the end-user authenticated (epoch s). */
  authTime: number
  acr?: string
  amr?: string[]
  nonce?: string
  codeChallenge?: string
  codeChallengeMethod?: 'S256' | 'plain'
  /** Whether the ID token must carry auth_time (max_age was sent). */
  requireAuthTime?: boolean
  /** The resources (RFC 8707) of the authorization request; the token request may name a subset. */
  resources?: string[]
  /** The claims requested with the `claims` parameter (Core §5.5) that the end-user agreed to. */
  claims?: RequestedClaims
  /** The authorization details (RFC 9396) the end-user approved; the token request may name a subset. */
  authorizationDetails?: AuthorizationDetail[]
  /**
   * The DPoP key the code is bound to (RFC 9449 §10: `dpop_jkt` at authorization, or the proof
   * of the pushed request): redemption needs a proof made with that key.
   */
  dpopJkt?: string
  /** Issue time (epoch s). */
  issuedAt: number
  /** Expiry (epoch s); an expired code is `missing`. */
  expiresAt: number
  /** Set once by `consume`. */
  consumedAt?: number
}

/** A refresh token generation, stored under the SHA-256 of its value. */
export interface RefreshTokenRecord {
  /** base64url SHA-256 of the token value. */
  id: string
  /** The grant (family) every generation of this token shares. */
  familyId: string
  clientId: string
  sub: string
  scope: string
  sid?: string
  authTime: number
  acr?: string
  amr?: string[]
  /** Issue time of this generation (epoch s). */
  issuedAt: number
  /** Expiry of this generation (epoch s). */
  expiresAt: number
  /** The family's absolute end (epoch s): rotation never extends past it. */
  familyExpiresAt: number
  /** The resources (RFC 8707) of the grant; a refresh may name a subset. */
  resources?: string[]
  /** The approved claims request of the grant (Core §5.5): refreshed tokens keep releasing them. */
  claims?: RequestedClaims
  /** The authorization details (RFC 9396) of the grant; a refresh may name a subset. */
  authorizationDetails?: AuthorizationDetail[]
  /** A public client's refresh token is bound to its DPoP key (RFC 9449 §5): refreshing needs a proof with it. */
  dpopJkt?: string
  /** The grant's revision it was issued under (`GrantRecord.revision`; absent is 0): a merge or replace ends it. */
  grantRevision?: number
  /** When the grant's last use was last recorded (`grants.touch`), carried through rotation; absent: `issuedAt`. */
  grantUsedAt?: number
  /** Set once by `rotate`. */
  consumedAt?: number
}

/** A browser session at the authorization server. */
export interface SessionRecord {
  /** base64url SHA-256 of the session cookie value. */
  id: string
  /** Public session id (the ID token `sid` claim). */
  sid: string
  sub: string
  /** When the end-user authenticated (epoch s). */
  authTime: number
  acr?: string
  amr?: string[]
  /** Client ids that received codes in this session. */
  clients: string[]
  /** Scopes the end-user consented to, by client id (explicit-consent clients). */
  consents: Record<string, string[]>
  /**
   * Claims the end-user consented to release on their own (requested with the `claims` parameter,
   * OpenID Connect Core §5.5, beyond those of the granted scopes), by client id.
   */
  claimConsents?: Record<string, string[]>
  /**
   * Families (grants) started in this session without `offline_access`: logout revokes them, so
   * their refresh tokens end with the session. The newest `SESSION_GRANTS_MAX` are kept.
   */
  grants?: string[]
  /** Expiry (epoch s). */
  expiresAt: number
}

/** A pending browser interaction: sign-in or consent for an authorization request, or a logout confirmation. */
export interface InteractionRecord {
  /** Random interaction id (it travels in forms and the host's login URL). */
  id: string
  kind: 'authorization' | 'logout' | 'device' | 'ciba'
  /** base64url SHA-256 of the browser-binding cookie: only that browser may complete it. */
  browserId: string
  /** Anti-CSRF token of the forms of this interaction. */
  csrf: string
  /** The validated request (JSON-serialisable). */
  request: Record<string, unknown>
  /** Set once the end-user signed in while consent is still pending. */
  login?: { sub: string; authTime: number; acr?: string; amr?: string[] }
  /** A failed sign-in's message to show on the form. */
  message?: string
  /** Expiry (epoch s). */
  expiresAt: number
}

/** A pushed authorization request (RFC 9126), stored under the id its `request_uri` carries. */
export interface PushedRequestRecord {
  /** base64url SHA-256 of the random reference at the end of `urn:ietf:params:oauth:request_uri:`. */
  id: string
  /** The client that pushed it: only that client may use it at the authorization endpoint. */
  clientId: string
  /** The pushed authorization request parameters, in order (a name may repeat, e.g. `resource`). */
  params: Array<[string, string]>
  /** The JWK thumbprint of the DPoP proof that came with the push (RFC 9449 §10.1), if any. */
  dpopJkt?: string
  /** Expiry (epoch s); an expired request is missing. */
  expiresAt: number
}

/** A signing key. */
export interface KeyRecord {
  kid: string
  alg: string
  /** The private key as a JWK (includes `d`); never published. */
  privateJwk: Record<string, unknown>
  /** The public key as a JWK; published in the JWKS while not expired. */
  publicJwk: Record<string, unknown>
  /** Creation time (epoch s). */
  createdAt: number
  /** Signing starts at (epoch s): publish before use. */
  activatesAt: number
  /** Signing stops at (epoch s); the key stays published until `expiresAt`. */
  retiresAt?: number
  /** Removed from the JWKS at (epoch s). */
  expiresAt?: number
}

/** A fixed-window counter of failed attempts (throttling). */
export interface AttemptCounter {
  /** Hits in the current window. */
  count: number
  /** When the window ends and the count starts again at zero (epoch s). */
  resetAt: number
}

/** The outcome of `attempts.take`: whether this call was counted, and the counter after it. */
export interface AttemptTaken extends AttemptCounter {
  /** True when the window had room and this call counted; false when the counter was at its limit. */
  taken: boolean
}

/** The storage interface. Every method may throw `StoreUnavailableError` when its backend is down. */
export interface Store {
  clients: {
    get(clientId: string): Promise<ClientRecord | undefined>
    /** Inserts unless the id exists. Returns whether it inserted. Atomic. */
    insert(record: ClientRecord): Promise<boolean>
    /**
     * Replaces an existing record. Returns false if the id does not exist, or, when `expected` is
     * given, if the stored record is no longer equal to it (compare-and-set: read-modify-write
     * callers such as secret rotation retry on false, so concurrent changes are never lost).
     * Atomic: of concurrent calls with one `expected`, at most one returns true. Pass `expected`
     * as `get` returned it (adapters may compare its JSON text).
     */
    update(record: ClientRecord, expected?: ClientRecord): Promise<boolean>
    delete(clientId: string): Promise<boolean>
    list(): Promise<ClientRecord[]>
  }
  codes: {
    insert(record: CodeRecord): Promise<void>
    /**
     * The code without consuming it (with `consumedAt` once consumed), or undefined when it is
     * unknown or expired: redemption checks client, redirect_uri and PKCE before it consumes.
     */
    get(id: string): Promise<CodeRecord | undefined>
    /** Atomically marks the code consumed. Keeps a tombstone until `expiresAt`. */
    consume(id: string, now: number): Promise<Consumed<CodeRecord>>
    /**
     * Optional, one atomic step (#44): unless a family in `unlessRevoked` is revoked (then changes
     * nothing), consumes the code and, only if this call did, inserts the refresh token and puts the
     * grant (as `grants.put`). Of concurrent callers at most one sees `ok`.
     */
    redeem?(
      id: string,
      now: number,
      redemption: { unlessRevoked: string[]; refreshToken?: RefreshTokenRecord; grant: GrantRecord },
    ): Promise<Redeemed>
  }
  refreshTokens: {
    insert(record: RefreshTokenRecord): Promise<void>
    get(id: string): Promise<RefreshTokenRecord | undefined>
    /** Atomically: if `id` is unconsumed and unexpired, mark it consumed AND insert `next`. */
    rotate(id: string, next: RefreshTokenRecord, now: number): Promise<Consumed<RefreshTokenRecord>>
    /** Optional: `rotate` unless a family in `unlessRevoked` is revoked, in one atomic step (#44). */
    rotateUnlessRevoked?(id: string, next: RefreshTokenRecord, now: number, unlessRevoked: string[]): Promise<Redeemed>
  }
  sessions: {
    put(record: SessionRecord): Promise<void>
    get(id: string): Promise<SessionRecord | undefined>
    delete(id: string): Promise<void>
    /**
     * The live (unexpired) sessions of an end-user, for `service.sessions.endAll(sub)`. Optional
     * for stores of your own (every built-in store has it): without it `endAll` throws. Memory and
     * Redis keep an index by `sub`; SQL stores read the records' `sub` (a scan of the sessions
     * table: an administrative call, not a request path).
     */
    listBySub?(sub: string): Promise<SessionRecord[]>
  }
  interactions: {
    put(record: InteractionRecord): Promise<void>
    get(id: string): Promise<InteractionRecord | undefined>
    /** Atomically removes and returns it: one interaction completes once. */
    take(id: string): Promise<InteractionRecord | undefined>
  }
  revocations: {
    /** Idempotent. Kills every code, refresh token and access token of the family until `until`. */
    revokeFamily(familyId: string, until: number): Promise<void>
    isFamilyRevoked(familyId: string): Promise<boolean>
    /** Denylists a JWT access token id until the token's own expiry. */
    revokeAccessToken(jti: string, until: number): Promise<void>
    isAccessTokenRevoked(jti: string): Promise<boolean>
  }
  /** Device authorizations (RFC 8628): decided once, redeemed once, across every instance. */
  deviceCodes: {
    /**
     * Inserts the record unless an unexpired record holds the same `userCode` (an expired one
     * with it is replaced). Returns whether it inserted: on false the caller draws a new user
     * code. Atomic: of concurrent inserts with one user code, at most one returns true.
     */
    insert(record: DeviceCodeRecord, now: number): Promise<boolean>
    /** The record (expired too, within its retention), or undefined when unknown. */
    get(id: string): Promise<DeviceCodeRecord | undefined>
    /** The unexpired record with this (normalised) user code, whatever its status. */
    findByUserCode(userCode: string, now: number): Promise<DeviceCodeRecord | undefined>
    /**
     * Records the end-user's decision, only on a pending, unexpired record. Returns whether this
     * call decided it: of concurrent calls, at most one returns true.
     */
    decide(id: string, decision: DeviceDecision, now: number): Promise<boolean>
    /**
     * One poll of the token endpoint, atomically: an approved, unredeemed record is redeemed
     * (`ok`, once across every caller; afterwards `replayed`); a pending one answers `pending`, or
     * `slow_down` when polled less than `interval` seconds after the previous poll (then
     * `interval` grows by 5); `polledAt` becomes `now` on every pending or slow_down answer.
     */
    poll(id: string, now: number): Promise<DevicePoll>
  }
  /** Backchannel authentication requests (OpenID CIBA): decided once, redeemed once, across every instance. */
  cibaRequests: {
    /** Inserts the record (its id and approvalId are random: no collision to handle). */
    insert(record: CibaRequestRecord): Promise<void>
    /** The record (expired too, within its retention), or undefined when unknown. */
    get(id: string): Promise<CibaRequestRecord | undefined>
    /** The unexpired record with this approval reference hash, whatever its status. */
    findByApproval(approvalId: string, now: number): Promise<CibaRequestRecord | undefined>
    /**
     * Records the end-user's decision, only on a pending, unexpired record. Returns whether this
     * call decided it: of concurrent calls, at most one returns true.
     */
    decide(id: string, decision: CibaDecision, now: number): Promise<boolean>
    /** One poll of the token endpoint, atomically, with the answers of `deviceCodes.poll`. */
    poll(id: string, now: number): Promise<CibaPoll>
  }
  /** Grants by family id, and an index of an end-user's grants. */
  grants: {
    /**
     * Inserts or replaces the record, except that `lastUsedAt` never goes back: when the stored one
     * is later than the record's (or the record has none), it stays (a put does not undo a `touch`).
     */
    put(record: GrantRecord): Promise<void>
    /** The unexpired record, or undefined. */
    get(id: string, now: number): Promise<GrantRecord | undefined>
    /**
     * The unexpired grants of an end-user (an index by sub on every built-in store: no scan of all
     * grants). A deleted grant is not listed, nor one put again for another end-user.
     */
    listBySub(sub: string, now: number): Promise<GrantRecord[]>
    delete(id: string): Promise<void>
    /**
     * Sets `lastUsedAt` to `at` on an existing record when it is older (or unset), atomically and
     * without touching anything else of it: a deleted or expired grant stays gone (never recreated),
     * and a concurrent `put` (a merge) is not undone. Optional for stores of your own (every
     * built-in store has it): without it, grants show no last use.
     */
    touch?(id: string, at: number): Promise<void>
  }
  /** Counters of failed attempts (client authentication, sign-in), shared by every instance. */
  attempts: {
    /**
     * Atomically adds one to the counter of `key`. A window starts with the first hit and lasts
     * `window` seconds; the first hit after it ends starts a new one. Returns the counter after it.
     */
    hit(key: string, window: number, now: number): Promise<AttemptCounter>
    /** The counter of `key`, or undefined when there is none or its window ended. */
    get(key: string, now: number): Promise<AttemptCounter | undefined>
    /**
     * Atomically adds one to the counter of `key` only while its window holds fewer than `limit`
     * hits (count-and-reserve: a cap such as registrations per hour). Windows work as in `hit`.
     * Across concurrent callers, at most `limit` per window see `taken: true`; a refused call does
     * not count. Optional for stores of your own (every built-in store has it): without it the
     * caps count with `hit` and compare, also atomic, but then refused calls count too.
     */
    take?(key: string, limit: number, window: number, now: number): Promise<AttemptTaken>
  }
  keys: {
    list(): Promise<KeyRecord[]>
    put(record: KeyRecord): Promise<void>
  }
  /** Pushed authorization requests (RFC 9126): each `request_uri` is used once. */
  pushedRequests: {
    put(record: PushedRequestRecord): Promise<void>
    /**
     * Atomically removes and returns it; undefined when unknown or expired. With `clientId`, only
     * a request pushed by that client is taken: one of another client stays, untouched, for its
     * owner (RFC 9126 §2.2, #27 item 9), and the answer is undefined as for an unknown one.
     */
    take(id: string, now: number, clientId?: string): Promise<PushedRequestRecord | undefined>
  }
  /**
   * Identifiers that may be used once, shared by every instance: DPoP proof `jti`s (RFC 9449 §11.1)
   * and client assertion `jti`s (RFC 7523 §3). Keys are namespaced by the caller (`dpop:…`, `jwt:…`).
   */
  replays: {
    /**
     * Atomically records `key` until `expiresAt` (epoch s). True when this call recorded it; false
     * when it was already recorded and that record has not expired (a replay). Of concurrent calls
     * with one key, exactly one gets true.
     */
    use(key: string, expiresAt: number, now: number): Promise<boolean>
  }
  /** Releases connections. */
  close?(): Promise<void>
}
