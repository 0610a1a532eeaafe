/**
 * #41 RAR: the parser and the narrowing of src/protocol/authorization_details.ts on their own: the
 * canonical JSON that makes two details equal, the subset rule at the token endpoint (§6.1, §7.2),
 * the host's hooks (a throwing validate refuses; a throwing describe only loses its text).
 */
import { describe, expect, it } from 'vitest'
import type { Context } from '../../../src/context.ts'
import {
  canonicalDetail,
  describeAuthorizationDetails,
  narrowAuthorizationDetails,
  parseAuthorizationDetails,
} from '../../../src/protocol/authorization_details.ts'
import type { ClientRecord } from '../../../src/storage/index.ts'

function contextOf(types: Record<string, object> = {}): Context {
  return {
    config: { authorizationDetailsTypes: ['a', 'b'], authorizationDetails: { types } },
  } as unknown as Context
}
const client = { authorizationDetailsTypes: ['a', 'b'] } as ClientRecord
const A = { type: 'a', x: { p: 1, q: [1, 2] } }
const B = { type: 'b' }

describe('#41 RAR authorization_details on its own', () => {
  it('#41 RAR canonical JSON ignores the order of members at every level, not the order of array items', () => {
    expect(canonicalDetail({ x: { q: [1, 2], p: 1 }, type: 'a' })).toBe(canonicalDetail(A))
    expect(canonicalDetail({ type: 'a', x: { p: 1, q: [2, 1] } })).not.toBe(canonicalDetail(A))
  })

  it('#41 RAR narrowing: absent keeps the grant, a subset narrows (repeats collapse), anything else is refused', async () => {
    const ctx = contextOf()
    expect(await narrowAuthorizationDetails(undefined, [A, B], client, ctx)).toEqual([A, B])
    expect(await narrowAuthorizationDetails(undefined, undefined, client, ctx)).toBeUndefined()
    expect(await narrowAuthorizationDetails(JSON.stringify([B, B]), [A, B], client, ctx)).toEqual([B])
    await expect(narrowAuthorizationDetails(JSON.stringify([A, B]), [A], client, ctx)).rejects.toMatchObject({
      code: 'invalid_authorization_details',
      message: 'authorization_details[1] was not granted',
    })
    await expect(narrowAuthorizationDetails(JSON.stringify([A]), undefined, client, ctx)).rejects.toMatchObject({
      code: 'invalid_authorization_details',
    })
  })

  it('#41 RAR a validate hook that throws refuses; one that returns undefined accepts; the hook gets a copy', async () => {
    let seen: unknown
    const ctx = contextOf({
      a: {
        validate: (detail: Record<string, unknown>) => {
          seen = detail
          detail.x = 'changed'
        },
      },
      b: {
        validate: () => {
          throw new Error('no')
        },
      },
    })
    expect(await parseAuthorizationDetails(JSON.stringify([A]), client, ctx)).toEqual([A])
    expect(seen).toMatchObject({ x: 'changed' })
    await expect(parseAuthorizationDetails(JSON.stringify([A, B]), client, ctx)).rejects.toMatchObject({
      code: 'invalid_authorization_details',
      message: 'authorization_details[1] is not a valid b detail',
    })
  })

  it('#41 RAR describe: a string titles the detail; a throwing or blank hook gives no description', () => {
    const ctx = contextOf({
      a: { describe: () => 'Pay' },
      b: {
        describe: () => {
          throw new Error('no')
        },
      },
    })
    expect(describeAuthorizationDetails([A, B], ctx)).toEqual([{ detail: A, description: 'Pay' }, { detail: B }])
  })
})
