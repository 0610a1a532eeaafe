/**
 * @module config/authorization_details
 * The Rich Authorization Requests options (RFC 9396): `authorizationDetailsTypes`, the detail types
 * the service knows, and `authorizationDetails.types`, the host's hooks per type (validate a detail,
 * describe it on the consent page). The written-out types of the public API and their schemas.
 */
import * as v from 'valibot'
import type { AuthorizationDetail } from '../storage/index.ts'

/**
 * A Standard Schema (https://standardschema.dev): a valibot schema (valibot ≥ 1), or zod's,
 * ArkType's. Only its `validate` is used: a result with `issues` refuses the detail.
 */
export interface StandardSchemaLike {
  readonly '~standard': {
    readonly validate: (value: unknown) => { issues?: unknown } | Promise<{ issues?: unknown }>
  }
}

/** The host's hooks for one authorization details type. */
export interface AuthorizationDetailsTypeOptions {
  /**
   * Checks a requested detail of this type, after the common checks (an object with this `type`):
   * a Standard Schema (e.g. a valibot schema of the type's fields), or a function that returns
   * false (or throws) to refuse it. A refused detail is `invalid_authorization_details`.
   */
  validate?: StandardSchemaLike | ((detail: AuthorizationDetail) => boolean | Promise<boolean>)
  /**
   * One plain-text sentence for the consent page, shown above the detail's fields (e.g. "Pay
   * 123.50 EUR to Merchant A"). Escaped as text; the fields are always shown too.
   */
  describe?: (detail: AuthorizationDetail) => string
}

/** Settings of the `authorizationDetails` option. */
export interface AuthorizationDetailsOptions {
  /** Hooks by type name; each type must be one of `authorizationDetailsTypes`. */
  types?: Record<string, AuthorizationDetailsTypeOptions>
}

/** An authorization details type name: 1 to 200 printable characters. */
const TypeName = v.pipe(
  v.string(),
  v.regex(/^[\x21-\x7e](?:[\x20-\x7e]{0,198}[\x21-\x7e])?$/, 'must be 1 to 200 printable ASCII characters'),
)

/** `authorizationDetailsTypes`: the types of RFC 9396 §10 discovery `authorization_details_types_supported`. */
export const AuthorizationDetailsTypesSchema = v.optional(
  v.pipe(
    v.array(TypeName),
    v.maxLength(100),
    v.transform((list) => [...new Set(list)]),
  ),
)

function isValidator(value: unknown): boolean {
  if (typeof value === 'function') return true
  const standard = (value as { '~standard'?: { validate?: unknown } } | null)?.['~standard']
  return typeof value === 'object' && value !== null && typeof standard?.validate === 'function'
}

/** `authorizationDetails`: the hooks per type. */
export const AuthorizationDetailsSchema = v.optional(
  v.strictObject({
    types: v.optional(
      v.record(
        TypeName,
        v.strictObject({
          validate: v.optional(
            v.custom<AuthorizationDetailsTypeOptions['validate']>(
              isValidator,
              'must be a Standard Schema (e.g. a valibot schema) or a function (detail) => boolean',
            ),
          ),
          describe: v.optional(
            v.custom<(detail: AuthorizationDetail) => string>(
              (value) => typeof value === 'function',
              'must be a function (detail) => string',
            ),
          ),
        }),
      ),
    ),
  }),
)
