/**
 * @module storage/ciba_records
 * The records of Client-Initiated Backchannel Authentication (OpenID CIBA Core 1.0) in the storage
 * contract (`Store.cibaRequests`, types.ts, which re-exports them). A CIBA request is close to a
 * device authorization: pending until the end-user decides, polled with an interval that grows on
 * `slow_down`, and an approved one redeemed once.
 */

/**
 * A backchannel authentication request, stored under the SHA-256 of its `auth_req_id`. The
 * approval page finds it by `approvalId`, the SHA-256 of another random reference (the page's link
 * never carries the `auth_req_id`).
 */
export interface CibaRequestRecord {
  /** base64url SHA-256 of the `auth_req_id`. */
  id: string
  /** base64url SHA-256 of the approval page's reference. */
  approvalId: string
  /** The grant (family) the tokens issued from it carry. */
  familyId: string
  clientId: string
  /** The end-user the hint named (`sub`): only they may decide. */
  sub: string
  /** The scopes the end-user is asked to approve, space-separated (`openid` among them). */
  scope: string
  /** The binding message shown to the end-user (CIBA §7.1). */
  bindingMessage?: string
  /** The `acr_values` of the request, in order of preference. */
  acrValues?: string[]
  /** The resources (RFC 8707) of the request. */
  resources?: string[]
  /**
   * The authorization details (RFC 9396) the end-user is asked to approve, as the CIBA endpoint
   * checked them (`AuthorizationDetail[]`); the approval page shows each, the tokens carry them.
   */
  authorizationDetails?: unknown[]
  /** How the client learns of the decision (CIBA §5). */
  deliveryMode: 'poll' | 'ping'
  /** The bearer token of the client's notification endpoint (ping mode, CIBA §7.1). */
  clientNotificationToken?: string
  /**
   * Ping mode only: the `auth_req_id` itself, which the ping carries (CIBA §10.2). Redeeming it
   * still takes the client's own authentication at the token endpoint.
   */
  authReqId?: string
  /** Seconds the client must wait between polls; each `slow_down` adds 5. */
  interval: number
  /** When the client last polled (epoch s). */
  polledAt?: number
  status: 'pending' | 'approved' | 'denied'
  /** How the end-user signed in to approve it (set with `approved`). */
  login?: { sub: string; authTime: number; acr?: string; amr?: string[] }
  /** Issue time (epoch s). */
  issuedAt: number
  /**
   * End of the request's lifetime (epoch s). Stores keep the record for `CIBA_REQUEST_RETENTION`
   * seconds more, so a late poll learns `expired_token`, not an unknown `auth_req_id`.
   */
  expiresAt: number
  /** Set once, by the `poll` that redeemed the approved record. */
  consumedAt?: number
}

/** Seconds a store keeps a CIBA request after its `expiresAt`. */
export const CIBA_REQUEST_RETENTION = 3600

/** The end-user's decision on a pending CIBA request. */
export type CibaDecision = { status: 'approved'; login: NonNullable<CibaRequestRecord['login']> } | { status: 'denied' }

/** The outcome of one token request's `poll` (CIBA §11), decided atomically by the store. */
export type CibaPoll =
  | { status: 'missing' } // unknown (or past retention)
  | { status: 'expired'; record: CibaRequestRecord } // past expiresAt: expired_token
  | { status: 'pending'; record: CibaRequestRecord } // authorization_pending (polledAt set to now)
  | { status: 'slow_down'; record: CibaRequestRecord } // pending, polled too soon: interval grew by 5
  | { status: 'denied'; record: CibaRequestRecord } // access_denied
  | { status: 'ok'; record: CibaRequestRecord } // approved, and this call redeemed it
  | { status: 'replayed'; record: CibaRequestRecord } // approved and redeemed before
