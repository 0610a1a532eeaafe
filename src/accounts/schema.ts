/**
 * @module accounts/schema
 * The host's account lookup (`accounts.findAccount`) and what it is told about a lookup; the
 * shape of the standard `address` claim (OpenID Connect Core §5.1.1) in users and accounts; the
 * schema of a built-in user of the sign-in page (option and configuration file `users`).
 */
import * as v from 'valibot'
import { strictObject } from '../schema_issues.ts'

/** What an account lookup is for: the claims that may be released from its answer. */
export interface AccountRequest {
  /** Where the claims go: the UserInfo response or an ID token. */
  use: 'userinfo' | 'id_token'
  /** The granted scopes of the token: their claims are released (OpenID Connect Core §5.4). */
  scopes: string[]
  /** Claim names the `claims` request parameter asked for here and the end-user approved (Core §5.5). */
  claims: string[]
}

/** Account lookup: the host's user directory. */
export interface AccountProvider {
  /**
   * Claims of the subject (must include `sub`), or undefined when it does not exist (any more).
   * `request` says which claims may be released (a lookup may return more; the rest is dropped).
   */
  findAccount(sub: string, request?: AccountRequest): Promise<Record<string, unknown> | undefined>
}

/** OpenID Connect Core §5.1.1: the `address` claim. */
export interface AddressClaim {
  formatted?: string
  street_address?: string
  locality?: string
  region?: string
  postal_code?: string
  country?: string
}

/** The `address` claim of a configured user (Core §5.1.1: every member a string). */
export const AddressSchema = strictObject({
  formatted: v.optional(v.string()),
  street_address: v.optional(v.string()),
  locality: v.optional(v.string()),
  region: v.optional(v.string()),
  postal_code: v.optional(v.string()),
  country: v.optional(v.string()),
})

/** A built-in user for the embedded sign-in page. Extra standard claims are kept as given. */
export const UserSchema = v.looseObject({
  sub: v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(255),
    v.regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
  ),
  username: v.pipe(v.string(), v.minLength(1), v.maxLength(255)),
  /** Plain text (hashed on load) or a `pbkdf2-sha256$…` hash. */
  password: v.pipe(v.string(), v.minLength(1), v.maxLength(1024)),
  email: v.optional(v.string()),
  email_verified: v.optional(v.boolean()),
  given_name: v.optional(v.string()),
  family_name: v.optional(v.string()),
  name: v.optional(v.string()),
  /** OpenID Connect Core §5.1.1, released by the `address` scope. */
  address: v.optional(AddressSchema),
  /** Released by the `phone` scope (Core §5.4). */
  phone_number: v.optional(v.string()),
  phone_number_verified: v.optional(v.boolean()),
})

/** A built-in user of the embedded sign-in page; other members are claims (`email`, `name`, …). */
export interface UserConfig {
  sub: string
  username: string
  /** The plain password (hashed at start) or a stored hash. */
  password: string
  email?: string
  email_verified?: boolean
  given_name?: string
  family_name?: string
  name?: string
  /** Core §5.1.1: the postal address, released by the `address` scope. */
  address?: AddressClaim
  /** Core §5.1: released by the `phone` scope. */
  phone_number?: string
  phone_number_verified?: boolean
  [claim: string]: unknown
}
