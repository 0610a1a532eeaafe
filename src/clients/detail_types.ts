/**
 * @module clients/detail_types
 * RFC 9396 §10 `authorization_details_types` of a self-registered client (dynamic registration, a
 * client id metadata document): cut to the service's `authorizationDetailsTypes`.
 */
import { OAuthError } from '../errors.ts'

/** Most types a client's metadata may list. */
const MAX_TYPES = 100

/**
 * An array of at most 100 strings (else invalid_client_metadata), cut to the service's types (a
 * type the service does not know is dropped, as a scope is); nothing left: undefined.
 */
export function parseDetailTypes(value: unknown, service: readonly string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined
  if (
    !Array.isArray(value) ||
    value.length > MAX_TYPES ||
    !value.every((type) => typeof type === 'string' && type.length <= 200)
  ) {
    throw new OAuthError('invalid_client_metadata', 'authorization_details_types must be an array of strings')
  }
  const types = [...new Set(value as string[])].filter((type) => service?.includes(type))
  return types.length > 0 ? types : undefined
}

/** The registration field of a self-registered client's detail types: `authorizationDetailsTypes` when any. */
export function detailTypesField(types: string[] | undefined): { authorizationDetailsTypes?: string[] } {
  return types ? { authorizationDetailsTypes: types } : {}
}
