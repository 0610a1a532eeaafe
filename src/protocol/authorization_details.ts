/**
 * @module protocol/authorization_details
 * Rich Authorization Requests (RFC 9396): the `authorization_details` parameter of the
 * authorization, pushed authorization (and CIBA) requests and of the token endpoint's grants.
 * `parseAuthorizationDetails` checks, in order, each failure `invalid_authorization_details` (§5):
 * 1. the value is JSON (RFC 8259), a non-empty array of at most `MAX_AUTHORIZATION_DETAILS`
 *    objects, nested at most `MAX_DETAIL_DEPTH` levels (the parameter itself is at most
 *    `limits.maxParameterLength` characters, as every parameter)
 * 2. each object has a string `type` (§2) that the service lists (`authorizationDetailsTypes`)
 *    and the client may use (its `authorizationDetailsTypes`)
 * 3. the common fields of §2.2, where present: `locations`, `actions`, `datatypes`, `privileges`
 *    arrays of strings, `identifier` a string
 * 4. the host's `validate` hook of the type (a Standard Schema or a function)
 * Descriptions name the parameter and the element's position, never a value.
 * At the token endpoint (§6.1–§7.2) the request may name a subset of the grant's details to
 * narrow the token to them (`narrowAuthorizationDetails`): every requested element must equal one
 * of the grant's (as JSON, whatever the order of members), else invalid_authorization_details.
 */
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { AuthorizationDetail, ClientRecord } from '../storage/index.ts'

/** Most elements in one `authorization_details` array. */
export const MAX_AUTHORIZATION_DETAILS = 16
/** Deepest nesting of arrays and objects below the array itself. */
export const MAX_DETAIL_DEPTH = 8

const COMMON_STRING_ARRAYS = ['locations', 'actions', 'datatypes', 'privileges'] as const

function refuse(description: string): OAuthError {
  return new OAuthError('invalid_authorization_details', description)
}

/** Nesting depth of a JSON value (a scalar is 0). */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  let deepest = 0
  for (const member of Object.values(value)) deepest = Math.max(deepest, depthOf(member))
  return deepest + 1
}

/** 1: the JSON array of objects. */
function parseArray(value: string): Record<string, unknown>[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    throw refuse('authorization_details is not valid JSON')
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw refuse('authorization_details must be a non-empty JSON array of objects')
  }
  if (parsed.length > MAX_AUTHORIZATION_DETAILS) {
    throw refuse(`authorization_details may hold at most ${MAX_AUTHORIZATION_DETAILS} objects`)
  }
  if (depthOf(parsed) > MAX_DETAIL_DEPTH + 1) {
    throw refuse(`authorization_details may be nested at most ${MAX_DETAIL_DEPTH} levels`)
  }
  parsed.forEach((element, index) => {
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      throw refuse(`authorization_details[${index}] is not an object`)
    }
  })
  return parsed as Record<string, unknown>[]
}

/** 2–3: the type, allowed to the service and the client, and the common fields of §2.2. */
function checkElement(element: Record<string, unknown>, index: number, client: ClientRecord, ctx: Context): void {
  const at = `authorization_details[${index}]`
  if (typeof element.type !== 'string' || element.type === '') throw refuse(`${at} has no string type`)
  if (!ctx.config.authorizationDetailsTypes?.includes(element.type)) {
    throw refuse(`${at} has a type this service does not support`)
  }
  if (!client.authorizationDetailsTypes?.includes(element.type)) {
    throw refuse(`${at} has a type the client may not use`)
  }
  for (const field of COMMON_STRING_ARRAYS) {
    const member = element[field]
    if (member !== undefined && !(Array.isArray(member) && member.every((item) => typeof item === 'string'))) {
      throw refuse(`${at}.${field} must be an array of strings`)
    }
  }
  if (element.identifier !== undefined && typeof element.identifier !== 'string') {
    throw refuse(`${at}.identifier must be a string`)
  }
}

/** 4: the host's hook of the element's type, if any. */
async function runHook(detail: AuthorizationDetail, index: number, ctx: Context): Promise<void> {
  const validate = ctx.config.authorizationDetails?.types?.[detail.type]?.validate
  if (validate === undefined) return
  let accepted: boolean
  try {
    if (typeof validate === 'function') accepted = (await validate(structuredClone(detail))) !== false
    else accepted = (await validate['~standard'].validate(structuredClone(detail))).issues === undefined
  } catch {
    accepted = false
  }
  if (!accepted) throw refuse(`authorization_details[${index}] is not a valid ${detail.type} detail`)
}

/**
 * Parses and checks an `authorization_details` parameter (checks 1–4 above); undefined when the
 * parameter is absent. Throws OAuthError `invalid_authorization_details`. The CIBA endpoint uses
 * it as the authorization endpoint does.
 */
export async function parseAuthorizationDetails(
  value: string | undefined,
  client: ClientRecord,
  ctx: Context,
): Promise<AuthorizationDetail[] | undefined> {
  if (value === undefined) return undefined
  const elements = parseArray(value)
  for (const [index, element] of elements.entries()) checkElement(element, index, client, ctx)
  const details = elements as AuthorizationDetail[]
  for (const [index, detail] of details.entries()) await runHook(detail, index, ctx)
  return details
}

/** A JSON value with object members sorted by name: equal details have equal canonical JSON. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
  )
}

/** The canonical JSON text of a detail (members sorted at every level). */
export function canonicalDetail(detail: AuthorizationDetail): string {
  return JSON.stringify(canonical(detail))
}

/**
 * The details of a token request for a grant (code, refresh token, CIBA; RFC 9396 §6.1, §7.2):
 * the requested ones, parsed and checked as at the authorization endpoint, each equal to one of
 * the grant's (else invalid_authorization_details: a superset, or details of a grant that has
 * none); none requested: all the grant's. Repeated requested elements collapse.
 */
export async function narrowAuthorizationDetails(
  value: string | undefined,
  granted: readonly AuthorizationDetail[] | undefined,
  client: ClientRecord,
  ctx: Context,
): Promise<AuthorizationDetail[] | undefined> {
  const requested = await parseAuthorizationDetails(value, client, ctx)
  if (requested === undefined) return granted ? [...granted] : undefined
  const grantedKeys = new Set((granted ?? []).map(canonicalDetail))
  const kept = new Map<string, AuthorizationDetail>()
  requested.forEach((detail, index) => {
    const key = canonicalDetail(detail)
    if (!grantedKeys.has(key)) throw refuse(`authorization_details[${index}] was not granted`)
    kept.set(key, detail)
  })
  return [...kept.values()]
}

/**
 * The details as the consent (and CIBA approval) page shows them: each with the host's
 * `describe` text of its type, when the hook gives a non-empty string (a hook that throws gives none;
 * the fields are shown either way).
 */
export function describeAuthorizationDetails(
  details: readonly AuthorizationDetail[],
  ctx: Context,
): Array<{ detail: AuthorizationDetail; description?: string }> {
  return details.map((detail) => {
    let description: unknown
    try {
      description = ctx.config.authorizationDetails?.types?.[detail.type]?.describe?.(structuredClone(detail))
    } catch {
      description = undefined
    }
    return typeof description === 'string' && description.trim() !== '' ? { detail, description } : { detail }
  })
}
