/**
 * #39 hardening round 3, token exchange (RFC 8693): no token buys what the user did not consent to.
 * docs/security.md "Token exchange" is the threat model these tests hold:
 * - item 1: an ID token as subject token buys no more than the grant behind it (its client, scopes,
 *   resources, lifetime), dies with that grant and that session, and another client's is refused;
 * - item 2: a back-channel logout token is never an ID token (BCL §2.4, RFC 8725 §3.11);
 * - item 3: the actor is the exchanging client or a token issued to it; nested delegation keeps
 *   the chain; the actor's grant bounds the result;
 * - item 6: the subject's account must still exist, as at refresh.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import { Browser } from '../../helpers/browser.ts'
import { authorizationUrl, signIn } from '../../helpers/flow.ts'
import { USERS, basic, form } from '../../helpers/service.ts'
import { backchannelSetup, rpLogout, signInToBoth, until, WEB_BC } from '../oidcc/suite.ts'
import {
  AT,
  CAL,
  EXCHANGE,
  GRANT,
  IDT,
  MAIL,
  type Ctx,
  exchange,
  exchangeRequest,
  introspect,
  refused,
  start,
  subject,
} from './token_exchange_fixtures.ts'

/** alice (user-1) signs in to `clientId` in `ctx`'s browser with `scope` (and more options). */
async function signInTo(
  ctx: Ctx,
  clientId: string,
  scope: string,
  options: { resource?: string; browser?: Browser; bob?: boolean } = {},
) {
  const { result } = await signIn(
    { ...ctx, browser: options.browser ?? ctx.browser },
    {
      client: { client_id: clientId },
      auth: oauth.ClientSecretBasic(`${clientId}-secret`),
      scope,
      ...(options.resource !== undefined ? { resource: options.resource } : {}),
      ...(options.bob ? { credentials: { username: 'bob', password: 'bob-password' } } : {}),
    },
  )
  return result
}

function idTokenSubject(idToken: string | undefined): Record<string, string> {
  return { subject_token: idToken as string, subject_token_type: IDT }
}

/** Revokes `token` (a refresh token revokes its whole grant, RFC 7009 §2.1) as `clientId`. */
async function revoke(ctx: Ctx, token: string, clientId: string): Promise<void> {
  const response = await ctx.service.fetch(
    form(ctx.as.revocation_endpoint as string, { token }, { authorization: basic(clientId, `${clientId}-secret`) }),
  )
  expect(response.status).toBe(200)
}

/** A client credentials token of `clientId`. */
async function clientToken(ctx: Ctx, clientId: string, scope = 'api1'): Promise<string> {
  const response = await oauth.clientCredentialsGrantRequest(
    ctx.as,
    { client_id: clientId },
    oauth.ClientSecretBasic(`${clientId}-secret`),
    { scope },
    ctx.opts,
  )
  return (await oauth.processClientCredentialsResponse(ctx.as, { client_id: clientId }, response)).access_token
}

describe('#39 item 1: an ID token as subject token buys no more than its grant', () => {
  it("#39 item 1 another client's ID token is refused as subject_token by default (openid-only grant at app, review's case)", async () => {
    const ctx = await start()
    const app = await signInTo(ctx, 'app', 'openid', { browser: new Browser(ctx.service.fetch) })
    await refused(ctx, idTokenSubject(app.id_token), 'invalid_request')
    await refused(ctx, { ...idTokenSubject(app.id_token), scope: 'mail.read' }, 'invalid_request')
  })

  it("#39 item 1 with the pair listed in tokenExchange.idTokenSubjects, the new token carries only the grant's scopes", async () => {
    const ctx = await start({ tokenExchange: { idTokenSubjects: { agent: ['app'] } } })
    const app = await signInTo(ctx, 'app', 'openid', { browser: new Browser(ctx.service.fetch) })
    const { raw, claims } = await exchange(ctx, idTokenSubject(app.id_token))
    // Not the agent's own scp: permissions (openid api1 mail.read): only what alice granted app.
    expect(raw.scope).toBe('openid')
    expect(claims).toMatchObject({ sub: 'user-1', client_id: 'agent', scope: 'openid' })
    expect(claims.gid).toBe(decodeJwt(app.id_token as string).gid)
    for (const scope of ['mail.read', 'api1', 'profile', 'email']) {
      await refused(ctx, { ...idTokenSubject(app.id_token), scope }, 'invalid_scope')
    }
    // Pairs are per exchanging client: agent2 is not listed.
    await refused(ctx, idTokenSubject(app.id_token), 'invalid_request', 'agent2')
  })

  it("#39 item 1 the exchanging client's own ID token buys what the user consented to for it, and its grant's resources only", async () => {
    const ctx = await start()
    const own = await signInTo(ctx, 'agent', 'openid mail.read', { browser: new Browser(ctx.service.fetch) })
    expect(decodeJwt(own.id_token as string).gid).toEqual(expect.any(String))
    const { raw } = await exchange(ctx, idTokenSubject(own.id_token))
    expect((raw.scope as string).split(' ').sort()).toEqual(['mail.read', 'openid'])
    await refused(ctx, { ...idTokenSubject(own.id_token), scope: 'api1' }, 'invalid_scope')
    // A grant made for a resource (RFC 8707): the new token stays within it.
    const bound = await signInTo(ctx, 'agent', 'openid mail.read', {
      browser: new Browser(ctx.service.fetch),
      resource: MAIL,
    })
    const within = await exchange(ctx, idTokenSubject(bound.id_token))
    expect(within.claims.aud).toBe(MAIL)
    await refused(ctx, { ...idTokenSubject(bound.id_token), resource: CAL }, 'invalid_target')
  })

  it('#39 item 1 the new token is tied to the grant: revoking it makes the token inactive and the ID token is refused', async () => {
    const ctx = await start()
    const own = await signInTo(ctx, 'agent', 'openid mail.read offline_access', {
      browser: new Browser(ctx.service.fetch),
    })
    const { result } = await exchange(ctx, idTokenSubject(own.id_token))
    expect((await introspect(ctx, result.access_token)).active).toBe(true)
    await revoke(ctx, own.refresh_token as string, 'agent')
    expect(await introspect(ctx, result.access_token)).toEqual({ active: false })
    await refused(ctx, idTokenSubject(own.id_token), 'invalid_request')
  })

  it('#39 item 1 ending the session makes the token inactive and the ID token refused, also for an offline_access grant that survives logout', async () => {
    const ctx = await start()
    const browser = new Browser(ctx.service.fetch)
    const online = await signInTo(ctx, 'agent', 'openid mail.read', { browser })
    const offline = await signInTo(ctx, 'agent', 'openid mail.read offline_access', { browser })
    const fromOnline = await exchange(ctx, idTokenSubject(online.id_token))
    const fromOffline = await exchange(ctx, idTokenSubject(offline.id_token))
    // alice signs out (RP-Initiated Logout through agent's ID token).
    const logout = new URL(ctx.as.end_session_endpoint as string)
    logout.searchParams.set('id_token_hint', offline.id_token as string)
    expect((await browser.request(logout.href)).status).toBeLessThan(400)
    expect(await introspect(ctx, fromOnline.result.access_token)).toEqual({ active: false })
    expect(await introspect(ctx, fromOffline.result.access_token)).toEqual({ active: false })
    await refused(ctx, idTokenSubject(online.id_token), 'invalid_request')
    await refused(ctx, idTokenSubject(offline.id_token), 'invalid_request')
    // The offline grant itself survives logout (Core §11): its refresh token still works.
    const refreshed = await oauth.refreshTokenGrantRequest(
      ctx.as,
      { client_id: 'agent' },
      oauth.ClientSecretBasic('agent-secret'),
      offline.refresh_token as string,
      ctx.opts,
    )
    expect(refreshed.status).toBe(200)
  })

  it('#39 item 1 the new token lives no longer than the ID token it came from', async () => {
    const ctx = await start()
    const own = await signInTo(ctx, 'agent', 'openid mail.read', { browser: new Browser(ctx.service.fetch) })
    const idExp = decodeJwt(own.id_token as string).exp as number
    ctx.clock.advance(idExp - ctx.clock.now() - 30)
    const { raw, claims } = await exchange(ctx, idTokenSubject(own.id_token))
    expect(claims.exp).toBeLessThanOrEqual(idExp)
    expect(raw.expires_in).toBeLessThanOrEqual(30)
  })
})

describe('#39 item 2: a back-channel logout token is never an ID token', () => {
  it('#39 item 2 a logout token is refused as subject_token, as actor_token and as id_token_hint (logout and authorize)', async () => {
    const ctx = await backchannelSetup()
    // web may exchange, so that only the token's type can refuse its own logout token.
    const web = await ctx.service.clients.find('web')
    await ctx.service.clients.update('web', { permissions: [...(web?.permissions ?? []), EXCHANGE, 'scp:api1'] })
    const tokens = await signInToBoth(ctx)
    await rpLogout(ctx, tokens.web)
    await until(() => ctx.receiver.deliveries.some((d) => d.url === WEB_BC))
    const delivery = ctx.receiver.deliveries.find((d) => d.url === WEB_BC)
    const logoutToken = delivery?.body.get('logout_token') as string
    expect(decodeJwt(logoutToken).events).toBeDefined()
    const ask = (parameters: Record<string, string>) =>
      oauth.genericTokenEndpointRequest(
        ctx.as,
        { client_id: 'web' },
        oauth.ClientSecretBasic('web-secret'),
        GRANT,
        parameters,
        ctx.opts,
      )
    // A fresh sign-in gives web a live access token to pair the logout token with.
    const fresh = await signIn({ ...ctx, browser: new Browser(ctx.service.fetch) }, { scope: 'openid api1' })
    const attempts: Array<Record<string, string>> = [
      { subject_token: logoutToken, subject_token_type: IDT },
      {
        subject_token: fresh.result.access_token,
        subject_token_type: AT,
        actor_token: logoutToken,
        actor_token_type: IDT,
      },
    ]
    for (const parameters of attempts) {
      const response = await ask(parameters)
      expect(response.status).toBe(400)
      expect(await response.json()).toMatchObject({ error: 'invalid_request' })
    }
    // id_token_hint at the end-session endpoint: not a hint, so no logout without confirmation.
    const hinted = new URL(ctx.as.end_session_endpoint as string)
    hinted.searchParams.set('id_token_hint', logoutToken)
    const answer = await new Browser(ctx.service.fetch).request(hinted.href)
    expect(answer.status).toBe(400)
    // id_token_hint at the authorization endpoint: an error redirect, as for any invalid hint.
    const request = await authorizationUrl(ctx.as, { clientId: 'web', scope: 'openid' })
    const url = new URL(request.url)
    url.searchParams.set('id_token_hint', logoutToken)
    url.searchParams.set('prompt', 'none')
    const authorize = await new Browser(ctx.service.fetch).request(url.href)
    const location = new URL(authorize.headers.get('location') ?? 'about:blank')
    expect(location.searchParams.get('error')).not.toBeNull()
    expect(location.searchParams.get('code')).toBeNull()
  })
})

describe('#39 item 3: the actor is the exchanging client or a token it holds; both grants bound the result', () => {
  it("#39 item 3 another client's tokens are refused as actor_token (ID token, client credentials), and another client's client credentials token as subject_token", async () => {
    const ctx = await start()
    const bob = await signInTo(ctx, 'app', 'openid', { browser: new Browser(ctx.service.fetch), bob: true })
    await refused(
      ctx,
      { ...subject(ctx), actor_token: bob.id_token as string, actor_token_type: IDT },
      'invalid_request',
    )
    const service = await clientToken(ctx, 'service')
    await refused(ctx, { ...subject(ctx), actor_token: service, actor_token_type: AT }, 'invalid_request')
    await refused(ctx, { subject_token: service, subject_token_type: AT }, 'invalid_request')
    // alice's access token issued to app is a subject (delegation), never an actor.
    await refused(ctx, { ...subject(ctx), actor_token: ctx.user.access_token, actor_token_type: AT }, 'invalid_request')
  })

  it("#39 item 3 the client's own tokens are actors: its client credentials token, its user's ID token", async () => {
    const ctx = await start()
    const own = await clientToken(ctx, 'agent')
    const withOwn = await exchange(ctx, { ...subject(ctx), actor_token: own, actor_token_type: AT })
    expect(withOwn.claims).toMatchObject({ sub: 'user-1', client_id: 'agent', act: { sub: 'agent' } })
    const bob = await signInTo(ctx, 'agent', 'openid', { browser: new Browser(ctx.service.fetch), bob: true })
    const withBob = await exchange(ctx, { ...subject(ctx), actor_token: bob.id_token as string, actor_token_type: IDT })
    expect(withBob.claims.act).toEqual({ sub: 'user-2' })
  })

  it('#39 item 3 an actor token that was itself exchanged keeps its own act (the whole chain)', async () => {
    const ctx = await start()
    const bob = await signInTo(ctx, 'agent', 'openid mail.read', { browser: new Browser(ctx.service.fetch), bob: true })
    // agent acts for bob: its exchanged token names agent as actor.
    const actor = await exchange(ctx, { subject_token: bob.access_token, subject_token_type: AT, scope: 'mail.read' })
    expect(actor.claims.act).toEqual({ sub: 'agent' })
    const chained = await exchange(ctx, {
      ...subject(ctx),
      scope: 'mail.read',
      actor_token: actor.result.access_token,
      actor_token_type: AT,
    })
    expect(chained.claims.act).toEqual({ sub: 'user-2', act: { sub: 'agent' } })
  })

  it("#39 item 3 revoking the actor's grant makes the exchanged token inactive", async () => {
    const ctx = await start()
    const bob = await signInTo(ctx, 'agent', 'openid mail.read offline_access', {
      browser: new Browser(ctx.service.fetch),
      bob: true,
    })
    const { result, claims } = await exchange(ctx, {
      ...subject(ctx),
      actor_token: bob.access_token,
      actor_token_type: AT,
    })
    expect(claims.gids).toEqual([decodeJwt(bob.access_token).gid])
    expect((await introspect(ctx, result.access_token)).active).toBe(true)
    await revoke(ctx, bob.refresh_token as string, 'agent')
    expect(await introspect(ctx, result.access_token)).toEqual({ active: false })
    // And at userinfo, the same answer as for any inactive token.
    const userinfo = await ctx.service.fetch(
      new Request(ctx.as.userinfo_endpoint as string, { headers: { authorization: `Bearer ${result.access_token}` } }),
    )
    expect(userinfo.status).toBe(401)
  })
})

describe('#39 item 6: token exchange checks the account, as refresh does', () => {
  it('#39 item 6 a subject whose account no longer exists is refused', async () => {
    const gone = new Set<string>()
    const ctx = await start({
      accounts: {
        findAccount: async (sub) => {
          if (gone.has(sub)) return undefined
          const user = USERS.find((u) => u.sub === sub)
          return user ? { sub, email: user.email } : undefined
        },
      },
    })
    await exchange(ctx, { ...subject(ctx), scope: 'mail.read' })
    gone.add('user-1')
    await refused(ctx, { ...subject(ctx), scope: 'mail.read' }, 'invalid_request')
    const response = await exchangeRequest(ctx, subject(ctx))
    expect(await response.json()).toMatchObject({ error: 'invalid_request' })
  })
})
