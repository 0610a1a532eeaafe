/**
 * #29 token exchange on every store: an exchange and a nested one, their revocation checks (the
 * exchanged token's own `jti`, and the subject's grant) read from the store. Runs on memory, and on
 * PostgreSQL / Redis / SQLite where they are available.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import { setup, signIn } from '../../helpers/flow.ts'
import { basic, clock, form } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'
const AT = 'urn:ietf:params:oauth:token-type:access_token'

describe.each(STORES)('#29 token exchange ($name store)', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function start() {
    const time = clock(Math.floor(Date.now() / 1000))
    opened = await kind.create(time.now)
    const ctx = await setup({ store: opened.store, now: time.now })
    for (const clientId of ['agent', 'agent2']) {
      await ctx.service.clients.ensure({
        clientId,
        clientSecret: `${clientId}-secret`,
        permissions: ['ept:token', 'ept:introspection', 'ept:revocation', `gt:${GRANT}`, 'scp:api1'],
      })
    }
    const user = await signIn(ctx, { scope: 'openid api1' })
    return { ...ctx, user: user.result }
  }
  type Ctx = Awaited<ReturnType<typeof start>>

  async function exchange(ctx: Ctx, clientId: string, subjectToken: string) {
    const client = { client_id: clientId }
    const response = await oauth.genericTokenEndpointRequest(
      ctx.as,
      client,
      oauth.ClientSecretBasic(`${clientId}-secret`),
      GRANT,
      { subject_token: subjectToken, subject_token_type: AT, scope: 'api1' },
      ctx.opts,
    )
    return oauth.processGenericTokenEndpointResponse(ctx.as, client, response)
  }

  async function active(ctx: Ctx, clientId: string, token: string): Promise<boolean> {
    const client = { client_id: clientId }
    const auth = oauth.ClientSecretBasic(`${clientId}-secret`)
    const response = await oauth.introspectionRequest(ctx.as, client, auth, token, ctx.opts)
    return (await oauth.processIntrospectionResponse(ctx.as, client, response)).active
  }

  it("#29 token exchange: act nests, a revoked jti and the subject's revoked grant are inactive", async () => {
    const ctx = await start()
    const first = await exchange(ctx, 'agent', ctx.user.access_token)
    const second = await exchange(ctx, 'agent2', first.access_token)
    expect(await active(ctx, 'agent2', second.access_token)).toBe(true)
    const introspected = await oauth.processIntrospectionResponse(
      ctx.as,
      { client_id: 'agent2' },
      await oauth.introspectionRequest(
        ctx.as,
        { client_id: 'agent2' },
        oauth.ClientSecretBasic('agent2-secret'),
        second.access_token,
        ctx.opts,
      ),
    )
    expect(introspected.act).toEqual({ sub: 'agent2', act: { sub: 'agent' } })

    // The agent revokes its own exchanged token: that one is refused, the user's and agent2's are not.
    const revoke = (token: string, id: string, secret: string) =>
      ctx.service.fetch(form(ctx.as.revocation_endpoint as string, { token }, { authorization: basic(id, secret) }))
    expect((await revoke(first.access_token, 'agent', 'agent-secret')).status).toBe(200)
    expect(await active(ctx, 'agent', first.access_token)).toBe(false)
    expect(await active(ctx, 'agent2', second.access_token)).toBe(true)
    await expect(exchange(ctx, 'agent2', first.access_token)).rejects.toMatchObject({ error: 'invalid_request' })

    // The user's app revokes its refresh token: the whole grant, exchanged tokens included.
    expect((await revoke(ctx.user.refresh_token as string, 'web', 'web-secret')).status).toBe(200)
    expect(await active(ctx, 'agent2', second.access_token)).toBe(false)
    await expect(exchange(ctx, 'agent', ctx.user.access_token)).rejects.toMatchObject({ error: 'invalid_request' })
  })
})
