/**
 * #30, Basic OP plan, module `oidcc-server` (OIDCCServerTest, OP-Response-code): the happy code
 * flow with scope openid, random state and nonce, run with both client authentication variants.
 * Beyond the normal flow's checks (suite.ts): the code is long and random enough, expires_in is
 * present (WARN if missing), at_hash/c_hash correct when present, no `name` in the ID token
 * (EnsureIdTokenDoesNotContainName) and no claims that were not requested
 * (EnsureIdTokenDoesNotContainNonRequestedClaims).
 */
import { describe, expect, it } from 'vitest'
import { CLIENT_AUTH_VARIANTS, codeFlow, createSuite } from './suite.ts'

/** What an ID token for scope=openid may carry (OIDC Core §2, plus sid and at_hash). */
const ID_TOKEN_MEMBERS = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'acr',
  'amr',
  'azp',
  'at_hash',
  'c_hash',
  'nbf',
  'jti',
  'sid',
  's_hash',
  // The grant the ID token was issued from (#39 item 1): a private claim, as Core §2 allows
  // ("ID Tokens MAY contain other Claims"); the suite does not fail on such claims.
  'gid',
]

describe.each(CLIENT_AUTH_VARIANTS)('#30 oidcc-server ($method)', (client) => {
  it('#30 oidcc-server (AUTHZ-01, AUTHZ-10, CODE-01, IDT-01–IDT-06, IDT-08–IDT-11, TOK-02–TOK-04): the happy code flow passes every check of the module', async () => {
    const suite = await createSuite()
    const flow = await codeFlow(suite, { client })
    expect(flow.loginShown).toBe(true)
    expect(flow.response.expires_in).toBeGreaterThan(0)
    expect(flow.idToken).not.toHaveProperty('name')
    for (const name of Object.keys(flow.idToken)) expect(ID_TOKEN_MEMBERS).toContain(name)
    expect(flow.userinfo.sub).toBe(flow.idToken.sub)
  })
})
