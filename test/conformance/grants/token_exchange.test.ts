/**
 * #29 token exchange (RFC 8693) through oauth4webapi's generic grant: an agent (a confidential
 * client holding `gt:urn:ietf:params:oauth:grant-type:token-exchange`) trades a user's access token
 * or ID token for an access token about the user that names the agent as its actor (`act`).
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import type { GatehouseEvent } from '../../../src/events/index.ts'
import type { TokenExchangeRequest } from '../../../src/index.ts'
import { setup } from '../../helpers/flow.ts'
import { ISSUER, basic, form } from '../../helpers/service.ts'
import { dpopKey } from '../dpop/dpop_fixtures.ts'
import {
  AT,
  CAL,
  EXCHANGE,
  GRANT,
  IDT,
  MAIL,
  USER_SCOPE,
  exchange,
  exchangeRequest,
  introspect,
  refused,
  start,
  subject,
} from './token_exchange_fixtures.ts'

describe('#29 token exchange (RFC 8693)', () => {
  it('#29 token exchange: discovery lists the grant type in both documents', async () => {
    const ctx = await start()
    expect(ctx.as.grant_types_supported).toContain(GRANT)
    const oauthDoc = await ctx.service.fetch(new Request(`${ISSUER}/.well-known/oauth-authorization-server`))
    expect(((await oauthDoc.json()) as { grant_types_supported: string[] }).grant_types_supported).toContain(GRANT)
  })

  it('#29 token exchange: sub of the subject, client_id and act of the agent, issued_token_type, no refresh token', async () => {
    const ctx = await start()
    const { raw, result, claims } = await exchange(ctx, subject(ctx))
    expect(Object.keys(raw).sort()).toEqual(['access_token', 'expires_in', 'issued_token_type', 'scope', 'token_type'])
    expect(raw).toMatchObject({ issued_token_type: AT, token_type: 'Bearer', expires_in: 3600 })
    expect(result.refresh_token).toBeUndefined()
    // openid is in the subject's scope and the agent's; profile is not the agent's: left out.
    expect((raw.scope as string).split(' ').sort()).toEqual(['api1', 'mail.read', 'openid'])
    const user = decodeJwt(ctx.user.access_token)
    expect(claims).toMatchObject({ iss: ISSUER, sub: 'user-1', client_id: 'agent', act: { sub: 'agent' } })
    expect(claims.gid).toBe(user.gid)
    expect(claims.auth_time).toBe(user.auth_time)
    expect(claims.cnf).toBeUndefined()
  })

  it('#29 token exchange: an exchanged token exchanged again nests act (the chain of delegation is kept)', async () => {
    const ctx = await start()
    const first = await exchange(ctx, { ...subject(ctx), scope: 'mail.read' })
    const second = await exchange(
      ctx,
      { subject_token: first.result.access_token, subject_token_type: AT, scope: 'mail.read' },
      'agent2',
    )
    expect(second.claims).toMatchObject({
      sub: 'user-1',
      client_id: 'agent2',
      act: { sub: 'agent2', act: { sub: 'agent' } },
    })
    const third = await exchange(ctx, { subject_token: second.result.access_token, subject_token_type: AT })
    expect(third.claims.act).toEqual({ sub: 'agent', act: { sub: 'agent2', act: { sub: 'agent' } } })
  })

  it('#29 token exchange: scope narrows to the requested subset; outside the subject or the client is invalid_scope', async () => {
    const ctx = await start()
    const { raw, claims } = await exchange(ctx, { ...subject(ctx), scope: 'mail.read' })
    expect(raw.scope).toBe('mail.read')
    expect(claims.scope).toBe('mail.read')
    expect(claims.aud).toBe(MAIL)
    // calendar.read: the app may have it, the user token has not.
    await refused(ctx, { ...subject(ctx), scope: 'calendar.read' }, 'invalid_scope')
    // profile: in the user token, but not one of the agent's scp: permissions.
    await refused(ctx, { ...subject(ctx), scope: 'profile' }, 'invalid_scope')
    await refused(ctx, { ...subject(ctx), scope: 'offline_access' }, 'invalid_scope')
    await refused(ctx, { ...subject(ctx), scope: 'nonexistent' }, 'invalid_scope')
  })

  it('#29 token exchange: resource and audience narrow aud and scope; a target the client may not use is invalid_target', async () => {
    const ctx = await start()
    const byResource = await exchange(ctx, { ...subject(ctx), resource: MAIL })
    expect(byResource.claims).toMatchObject({ aud: MAIL, scope: 'mail.read', act: { sub: 'agent' } })
    // audience is a logical name (RFC 8693 §2.1): api1's audience is `api1`.
    const byAudience = await exchange(ctx, { ...subject(ctx), audience: 'api1' })
    expect(byAudience.claims).toMatchObject({ aud: 'api1', scope: 'api1' })
    const both = await exchange(ctx, [
      ['subject_token', ctx.user.access_token],
      ['subject_token_type', AT],
      ['audience', 'api1'],
      ['audience', MAIL],
    ])
    expect(both.claims.aud).toEqual(['api1', MAIL])
    expect((both.claims.scope as string).split(' ').sort()).toEqual(['api1', 'mail.read'])
    // The agent may not target the calendar; nobody may target an unknown audience.
    await refused(ctx, { ...subject(ctx), resource: CAL }, 'invalid_target')
    await refused(ctx, { ...subject(ctx), audience: CAL }, 'invalid_target')
    await refused(ctx, { ...subject(ctx), audience: 'elsewhere' }, 'invalid_target')
    await refused(ctx, { ...subject(ctx), resource: 'not a uri' }, 'invalid_target')
    // A resource the client may target but for which the granted scope holds nothing.
    await refused(ctx, { ...subject(ctx), scope: 'api1', resource: MAIL }, 'invalid_target')
  })

  it('#29 token exchange: invalid_request for a missing, unknown, expired or revoked subject or actor token and unsupported types', async () => {
    const ctx = await start()
    const good = subject(ctx)
    await refused(ctx, { subject_token_type: AT }, 'invalid_request')
    await refused(ctx, { subject_token: good.subject_token as string }, 'invalid_request')
    await refused(ctx, { subject_token: 'not-a-token', subject_token_type: AT }, 'invalid_request')
    await refused(
      ctx,
      { ...good, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      'invalid_request',
    )
    await refused(ctx, { ...good, subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }, 'invalid_request')
    // An access token presented as an ID token (and the reverse) does not verify.
    await refused(ctx, { ...good, subject_token_type: IDT }, 'invalid_request')
    await refused(ctx, { subject_token: ctx.user.id_token as string, subject_token_type: AT }, 'invalid_request')
    await refused(
      ctx,
      { ...good, requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      'invalid_request',
    )
    await refused(ctx, { ...good, requested_token_type: IDT }, 'invalid_request')
    await refused(ctx, { ...good, actor_token: 'not-a-token', actor_token_type: AT }, 'invalid_request')
    await refused(ctx, { ...good, actor_token: ctx.user.access_token }, 'invalid_request')
    await refused(ctx, { ...good, actor_token_type: AT }, 'invalid_request')
    // An explicit requested_token_type of access_token is fine.
    await exchange(ctx, { ...good, requested_token_type: AT })
    // Revoked subject token (its jti denylisted by the revocation endpoint).
    const revoke = await oauth.revocationRequest(
      ctx.as,
      { client_id: 'app' },
      oauth.ClientSecretBasic('app-secret'),
      ctx.user.access_token,
      ctx.opts,
    )
    await oauth.processRevocationResponse(revoke)
    await refused(ctx, good, 'invalid_request')
  })

  it('#29 token exchange: an expired subject token (access or ID token) is invalid_request', async () => {
    const ctx = await start()
    ctx.clock.advance(3600)
    await refused(ctx, subject(ctx), 'invalid_request')
    await refused(ctx, { subject_token: ctx.user.id_token as string, subject_token_type: IDT }, 'invalid_request')
  })

  it('#29 token exchange: a revoked actor token is invalid_request', async () => {
    const ctx = await start()
    // The agent's own token as actor (#39 item 3: only a token issued to the agent acts).
    const cc = await oauth.clientCredentialsGrantRequest(
      ctx.as,
      { client_id: 'agent' },
      oauth.ClientSecretBasic('agent-secret'),
      { scope: 'api1' },
      ctx.opts,
    )
    const own = (await oauth.processClientCredentialsResponse(ctx.as, { client_id: 'agent' }, cc)).access_token
    const actor = { ...subject(ctx), actor_token: own, actor_token_type: AT }
    await exchange(ctx, actor)
    const response = await ctx.service.fetch(
      form(ctx.as.revocation_endpoint as string, { token: own }, { authorization: basic('agent', 'agent-secret') }),
    )
    expect(response.status).toBe(200)
    await refused(ctx, actor, 'invalid_request')
  })

  it('#29 token exchange: a client without the permission is unauthorized_client; a public client cannot hold it', async () => {
    const ctx = await start()
    await refused(ctx, subject(ctx), 'unauthorized_client', 'plain')
    await expect(
      ctx.service.clients.ensure({ clientId: 'public-agent', permissions: ['ept:token', EXCHANGE, 'scp:api1'] }),
    ).rejects.toThrow(/public client cannot use token exchange/)
    // The grant refuses public clients (client_id only) as client_credentials does.
    await ctx.service.clients.ensure({ clientId: 'spa-like', permissions: ['ept:token', 'scp:api1'] })
    const response = await ctx.service.fetch(
      form(ctx.as.token_endpoint as string, { grant_type: GRANT, client_id: 'spa-like', ...subject(ctx) }),
    )
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: 'invalid_client' })
  })

  it('#29 token exchange: failed client authentications are throttled as at every grant', async () => {
    const ctx = await start()
    const attempt = (secret: string) =>
      ctx.service.fetch(
        form(
          ctx.as.token_endpoint as string,
          { grant_type: GRANT, ...subject(ctx) },
          { authorization: basic('agent', secret) },
        ),
        { address: '203.0.113.7' },
      )
    for (let i = 0; i < 10; i++) expect((await attempt(`guess-${i}`)).status).toBe(401)
    const throttled = await attempt('agent-secret')
    expect(throttled.status).toBe(429)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('#29 token exchange: an ID token of this issuer as subject token (a listed client pair, #39 item 1)', async () => {
    const ctx = await start({ tokenExchange: { idTokenSubjects: { agent: ['app'] } } })
    const { raw, claims } = await exchange(ctx, {
      subject_token: ctx.user.id_token as string,
      subject_token_type: IDT,
      scope: 'mail.read',
    })
    expect(raw.issued_token_type).toBe(AT)
    expect(claims).toMatchObject({
      sub: 'user-1',
      client_id: 'agent',
      aud: MAIL,
      scope: 'mail.read',
      act: { sub: 'agent' },
    })
    // The ID token's grant is the new token's: revoking it revokes this token.
    expect(claims.gid).toBe(decodeJwt(ctx.user.access_token).gid)
    // The grant's scope bounds it: calendar.read was not granted to app (the agent may not have it either).
    await refused(
      ctx,
      { subject_token: ctx.user.id_token as string, subject_token_type: IDT, scope: 'calendar.read' },
      'invalid_scope',
    )
  })

  it('#29 token exchange: the new token never outlives the subject token', async () => {
    const ctx = await start()
    const userExp = decodeJwt(ctx.user.access_token).exp as number
    ctx.clock.advance(3000)
    const { raw, claims } = await exchange(ctx, subject(ctx))
    expect(raw.expires_in).toBe(600)
    expect(claims.exp).toBe(userExp)
    const short = await exchange(ctx, { ...subject(ctx), scope: 'api1' })
    ctx.clock.advance(500)
    const capped = await exchange(ctx, { subject_token: short.result.access_token, subject_token_type: AT })
    expect(capped.raw.expires_in).toBe(100)
  })

  it('#29 token exchange: with a DPoP proof the token is DPoP-bound (token_type DPoP, cnf.jkt)', async () => {
    const time = Math.floor(Date.now() / 1000)
    const ctx = await start({ now: () => time })
    const key = await dpopKey()
    const { raw, claims } = await exchange(ctx, subject(ctx), 'agent', { DPoP: oauth.DPoP({}, key.keyPair) })
    expect(raw.token_type).toBe('DPoP')
    expect(claims.cnf).toEqual({ jkt: key.jkt })
    expect(claims.act).toEqual({ sub: 'agent' })
  })

  it('#29 token exchange: a DPoP-bound subject token is exchanged only with a proof of its own key (RFC 9449 §6.1), and stays bound to it', async () => {
    const time = Math.floor(Date.now() / 1000)
    const ctx = await start({ now: () => time })
    const key = await dpopKey()
    const other = await dpopKey()
    const bound = await exchange(ctx, subject(ctx), 'agent', { DPoP: oauth.DPoP({}, key.keyPair) })
    const again = { subject_token: bound.result.access_token, subject_token_type: AT }
    // Without a proof, the stolen bound token would come back as a bearer token.
    await refused(ctx, again, 'invalid_request', 'agent2')
    const wrongKey = await exchangeRequest(ctx, again, 'agent2', { DPoP: oauth.DPoP({}, other.keyPair) })
    expect(wrongKey.status).toBe(400)
    expect(await wrongKey.json()).toMatchObject({ error: 'invalid_request' })
    const { raw, claims } = await exchange(ctx, again, 'agent2', { DPoP: oauth.DPoP({}, key.keyPair) })
    expect(raw.token_type).toBe('DPoP')
    expect(claims.cnf).toEqual({ jkt: key.jkt })
  })

  it('#29 token exchange: introspection of the new token shows act', async () => {
    const ctx = await start()
    const first = await exchange(ctx, { ...subject(ctx), scope: 'mail.read' })
    const second = await exchange(ctx, { subject_token: first.result.access_token, subject_token_type: AT }, 'agent2')
    const answer = await introspect(ctx, first.result.access_token)
    expect(answer).toMatchObject({ active: true, sub: 'user-1', client_id: 'agent', act: { sub: 'agent' } })
    const nested = await introspect(ctx, second.result.access_token, 'agent2')
    expect(nested).toMatchObject({ active: true, act: { sub: 'agent2', act: { sub: 'agent' } } })
  })

  it("#29 token exchange: revoking the subject token's grant makes the exchanged tokens inactive", async () => {
    const ctx = await start()
    const first = await exchange(ctx, { ...subject(ctx), scope: 'mail.read' })
    const second = await exchange(ctx, { subject_token: first.result.access_token, subject_token_type: AT }, 'agent2')
    expect((await introspect(ctx, first.result.access_token)).active).toBe(true)
    // Revoking the app's refresh token revokes its whole grant (RFC 7009 §2.1).
    const response = await ctx.service.fetch(
      form(
        ctx.as.revocation_endpoint as string,
        { token: ctx.user.refresh_token as string, token_type_hint: 'refresh_token' },
        { authorization: basic('app', 'app-secret') },
      ),
    )
    expect(response.status).toBe(200)
    expect(await introspect(ctx, first.result.access_token)).toEqual({ active: false })
    expect(await introspect(ctx, second.result.access_token, 'agent2')).toEqual({ active: false })
    await refused(
      ctx,
      { subject_token: first.result.access_token, subject_token_type: AT },
      'invalid_request',
      'agent2',
    )
  })

  it('#29 token exchange: the tokenExchange.authorize hook sees the exchange, may refuse it (invalid_request) or narrow it', async () => {
    const seen: TokenExchangeRequest[] = []
    const ctx = await start({
      tokenExchange: {
        authorize(request) {
          seen.push(request)
          if (request.clientId === 'agent2') return false
          if (request.scope.includes('mail.read')) return { scope: ['mail.read', 'calendar.read'], audience: [MAIL] }
          return true
        },
      },
    })
    const narrowed = await exchange(ctx, subject(ctx))
    expect(narrowed.claims).toMatchObject({ aud: MAIL, scope: 'mail.read' })
    expect(narrowed.raw.scope).toBe('mail.read')
    expect(seen[0]).toMatchObject({
      clientId: 'agent',
      subject: { sub: 'user-1', tokenType: 'access_token', clientId: 'app', scope: USER_SCOPE.split(' ') },
      act: { sub: 'agent' },
      audience: ['api1', MAIL],
    })
    expect(seen[0]?.scope.sort()).toEqual(['api1', 'mail.read', 'openid'])
    const untouched = await exchange(ctx, { ...subject(ctx), scope: 'api1' })
    expect(untouched.claims).toMatchObject({ aud: 'api1', scope: 'api1' })
    await refused(ctx, { ...subject(ctx), scope: 'mail.read' }, 'invalid_request', 'agent2')
    await expect(setup({ tokenExchange: { authorize: 'yes' as never } })).rejects.toThrow(
      /tokenExchange\.authorize: must be a function/,
    )
  })

  it('#29 token exchange: a hook narrowing the audience to nothing is invalid_target', async () => {
    const ctx = await start({ tokenExchange: { authorize: () => ({ audience: ['https://other.example.test/'] }) } })
    await refused(ctx, subject(ctx), 'invalid_target')
  })

  it('#29 token exchange: a hook leaving no scope for the audience it keeps is invalid_scope', async () => {
    const ctx = await start({ tokenExchange: { authorize: () => ({ scope: ['mail.read'], audience: ['api1'] }) } })
    await refused(ctx, subject(ctx), 'invalid_scope')
  })

  it('#29 token exchange: every exchange is an audit event naming subject, actor and client', async () => {
    const events: GatehouseEvent[] = []
    const ctx = await start({ onEvent: (event) => void events.push(event) })
    const { claims } = await exchange(ctx, { ...subject(ctx), scope: 'api1' })
    const exchanged = events.filter((event) => event.type === 'token.exchanged')
    expect(exchanged).toEqual([
      expect.objectContaining({
        type: 'token.exchanged',
        clientId: 'agent',
        sub: 'user-1',
        actor: 'agent',
        subjectTokenType: 'access_token',
        grantId: decodeJwt(ctx.user.access_token).gid,
        jti: claims.jti,
        scope: 'api1',
      }),
    ])
  })
})
