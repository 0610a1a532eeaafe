/**
 * @module storage/device_records
 * The records of the device authorization grant (RFC 8628) in the storage contract
 * (`Store.deviceCodes`, types.ts, which re-exports them).
 */

/**
 * A device authorization (RFC 8628), stored under the SHA-256 of its device code. It is pending
 * until the end-user approves or denies it at the verification page, and an approved one is
 * redeemed once at the token endpoint.
 */
export interface DeviceCodeRecord {
  /** base64url SHA-256 of the device code value. */
  id: string
  /**
   * The user code, normalised: the 8 characters the end-user types, upper case, without the dash.
   * Unique among unexpired records.
   */
  userCode: string
  /** The grant (family) the tokens issued from it carry. */
  familyId: string
  clientId: string
  /** The scopes the end-user is asked to approve, space-separated. */
  scope: string
  /** The resources (RFC 8707) of the request; the token request may name a subset. */
  resources?: string[]
  /** Seconds the client must wait between polls; each `slow_down` adds 5 (RFC 8628 §3.5). */
  interval: number
  /** When the client last polled (epoch s). */
  polledAt?: number
  status: 'pending' | 'approved' | 'denied'
  /** Who approved it, and how they signed in (set with `approved`). */
  login?: { sub: string; authTime: number; acr?: string; amr?: string[] }
  /** Issue time (epoch s). */
  issuedAt: number
  /**
   * End of the device code's lifetime (epoch s). Stores keep the record for
   * `DEVICE_CODE_RETENTION` seconds more, so a late poll learns `expired_token`, not an unknown code.
   */
  expiresAt: number
  /** Set once, by the `poll` that redeemed the approved record. */
  consumedAt?: number
}

/** Seconds a store keeps a device authorization after its `expiresAt`. */
export const DEVICE_CODE_RETENTION = 3600

/** The end-user's decision on a pending device authorization. */
export type DeviceDecision =
  | { status: 'approved'; login: NonNullable<DeviceCodeRecord['login']> }
  | { status: 'denied' }

/** The outcome of one token request's `poll` (RFC 8628 §3.5), decided atomically by the store. */
export type DevicePoll =
  | { status: 'missing' } // unknown (or past retention)
  | { status: 'expired'; record: DeviceCodeRecord } // past expiresAt: expired_token
  | { status: 'pending'; record: DeviceCodeRecord } // authorization_pending (polledAt set to now)
  | { status: 'slow_down'; record: DeviceCodeRecord } // pending, polled too soon: interval grew by 5
  | { status: 'denied'; record: DeviceCodeRecord } // access_denied
  | { status: 'ok'; record: DeviceCodeRecord } // approved, and this call redeemed it
  | { status: 'replayed'; record: DeviceCodeRecord } // approved and redeemed before
