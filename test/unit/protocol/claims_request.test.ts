import { describe, expect, it } from 'vitest'
import { createScopeRegistry } from '../../../src/config/scopes.ts'
import { isPermittedClaim, permittedClaims } from '../../../src/protocol/claims_request.ts'

const ctx = { scopes: createScopeRegistry([{ name: 'shoes', claims: ['shoe_size'] }]) }
const profileOnly = { permissions: ['ept:authorization', 'scp:openid', 'scp:profile'] }

describe('#39 item 4: isPermittedClaim (Core §5.4: a scope’s claims need scp: of that scope)', () => {
  it.each([
    ['name', true], // profile
    ['given_name', true],
    ['email', false], // email
    ['email_verified', false],
    ['phone_number', false], // phone
    ['address', false], // address
    ['shoe_size', false], // a host scope
    ['sub', true], // the subject
    ['auth_time', true], // no scope releases it: its own rules
    ['acr', true],
    ['internal_role', true], // no scope releases it (and scopedClaims never releases it)
  ])('scp:openid scp:profile, %s → %s', (name, expected) => {
    expect(isPermittedClaim(name, profileOnly, ctx)).toBe(expected)
  })

  it('a claim of a host scope is permitted with scp: of that scope; sub without any permission', () => {
    expect(isPermittedClaim('shoe_size', { permissions: ['scp:shoes'] }, ctx)).toBe(true)
    expect(isPermittedClaim('sub', { permissions: [] }, ctx)).toBe(true)
    expect(isPermittedClaim('name', { permissions: [] }, ctx)).toBe(false)
  })
})

describe('#39 item 4: permittedClaims', () => {
  it('drops the claims the client may not ask for from each member; undefined when nothing is left', () => {
    const requested = { userinfo: ['email', 'phone_number', 'address', 'given_name'], id_token: ['email', 'name'] }
    expect(permittedClaims(requested, profileOnly, ctx)).toEqual({ userinfo: ['given_name'], id_token: ['name'] })
    expect(permittedClaims({ id_token: ['email'] }, profileOnly, ctx)).toBeUndefined()
    expect(permittedClaims({ userinfo: ['email'] }, { permissions: ['scp:email'] }, ctx)).toEqual({
      userinfo: ['email'],
    })
    expect(permittedClaims(undefined, profileOnly, ctx)).toBeUndefined()
  })
})
