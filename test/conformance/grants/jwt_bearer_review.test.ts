/**
 * #45 review, resource authorization server side: `aud` must be this issuer as a single string
 * (item 3); an ID-JAG lives at most an hour (`exp` at most an hour ahead, `iat` at most an hour
 * back, each plus the skew) and its replay record no longer (item 4); `email_verified: false`
 * never maps by email (item 5). Each refusal `invalid_grant` naming the rule. Runs on memory, and on
 * PostgreSQL / Redis / SQLite where available.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { IdentityAssertionAccountQuery } from '../../../src/index.ts'
import type { Store } from '../../../src/storage/types.ts'
import { ISSUER } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import { IDP, type JagCtx, accessClaims, jagService, redeem, signIdJag } from './jwt_bearer_fixtures.ts'

/** `store` with the expiry of every replay record it is asked to keep written down in `expiries`. */
function recordingReplays(store: Store, expiries: number[]): Store {
  const replays: Store['replays'] = {
    ...store.replays,
    use: (key, expiresAt, now) => {
      expiries.push(expiresAt)
      return store.replays.use(key, expiresAt, now)
    },
  }
  return { ...store, replays }
}

describe.each(STORES)('#45 review: ID-JAG audience, lifetime and email ($name store)', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })
  async function start(setup: Parameters<typeof jagService>[1] = {}, expiries: number[] = []): Promise<JagCtx> {
    opened = await kind.create(() => Math.floor(Date.now() / 1000))
    return jagService(recordingReplays(opened.store, expiries), setup)
  }
  async function expectRefused(ctx: JagCtx, assertion: string, rule: RegExp): Promise<void> {
    const { status, body } = await redeem(ctx, assertion)
    expect({ status, error: body.error }).toEqual({ status: 400, error: 'invalid_grant' })
    expect(String(body.error_description)).toMatch(rule)
  }

  it('#45 review item 3: aud as an array, even one holding only this issuer, is invalid_grant', async () => {
    const ctx = await start()
    const now = ctx.time.now()
    for (const aud of [[ISSUER], [ISSUER, 'https://other-as.example.test']]) {
      await expectRefused(ctx, await signIdJag(ctx.key, now, { aud }), /aud must be a single string: this issuer/)
    }
    expect((await redeem(ctx, await signIdJag(ctx.key, now, { aud: ISSUER }))).status).toBe(200)
  })

  it('#45 review item 4: exp more than an hour ahead (10 years, 1e308) is invalid_grant, never a 503', async () => {
    const ctx = await start()
    const now = ctx.time.now()
    for (const exp of [now + 3600 + 31, now + 10 * 365 * 86400, 1e308]) {
      await expectRefused(ctx, await signIdJag(ctx.key, now, { exp }), /lives too long: exp is more than an hour ahead/)
    }
  })

  it('#45 review item 4: iat more than an hour (plus the skew) in the past is invalid_grant', async () => {
    const ctx = await start()
    const now = ctx.time.now()
    await expectRefused(
      ctx,
      await signIdJag(ctx.key, now, { iat: now - 3600 - 31, exp: now + 60 }),
      /too old: iat is more than an hour ago/,
    )
    await expectRefused(
      ctx,
      await signIdJag(ctx.key, now, { iat: now - 30 * 86400, exp: now + 60 }),
      /too old: iat is more than an hour ago/,
    )
  })

  it('#45 review item 4: at the bounds (exp an hour ahead, iat an hour ago) it is accepted; its replay record ends within the hour', async () => {
    const expiries: number[] = []
    const ctx = await start({}, expiries)
    const now = ctx.time.now()
    const longest = await redeem(ctx, await signIdJag(ctx.key, now, { exp: now + 3600 }))
    expect(longest.status).toBe(200)
    const oldest = await redeem(ctx, await signIdJag(ctx.key, now, { iat: now - 3600, exp: now + 60 }))
    expect(oldest.status).toBe(200)
    expect(expiries).toHaveLength(2)
    for (const expiresAt of expiries) expect(expiresAt).toBeLessThanOrEqual(now + 3600 + 2 * 30)
  })

  it('#45 review item 5: email_verified false never maps by email (invalid_grant); true or absent does', async () => {
    const ctx = await start()
    const now = ctx.time.now()
    for (const unverified of [false, 'false']) {
      await expectRefused(
        ctx,
        await signIdJag(ctx.key, now, { email_verified: unverified }),
        /the assertion's email is not verified/,
      )
    }
    for (const verified of [true, undefined]) {
      const { status, body } = await redeem(ctx, await signIdJag(ctx.key, now, { email_verified: verified }))
      expect(status).toBe(200)
      expect(accessClaims(body).sub).toBe('user-1')
    }
  })

  it('#45 review item 5: the findAccount hook gets no email when it is marked unverified (the claims keep the mark); sub mapping ignores it', async () => {
    const seen: IdentityAssertionAccountQuery[] = []
    const ctx = await start({
      options: {
        identityAssertion: {
          findAccount: (query) => {
            seen.push(query)
            return query.email === 'alice@example.com' ? 'user-1' : undefined
          },
        },
      },
    })
    const now = ctx.time.now()
    await expectRefused(ctx, await signIdJag(ctx.key, now, { email_verified: false }), /no account here/)
    expect(seen[0]?.email).toBeUndefined()
    expect(seen[0]?.claims).toMatchObject({ email: 'alice@example.com', email_verified: false })

    opened = await (async () => {
      await opened?.dispose()
      return kind.create(() => Math.floor(Date.now() / 1000))
    })()
    const bySub = await jagService(opened.store, {
      issuers: [{ issuer: IDP, jwks: { keys: [ctx.key.jwk as Record<string, unknown>] }, accountClaim: 'sub' }],
      key: ctx.key,
    })
    const { status, body } = await redeem(
      bySub,
      await signIdJag(bySub.key, bySub.time.now(), { sub: 'user-1', email_verified: false }),
    )
    expect(status).toBe(200)
    expect(accessClaims(body).sub).toBe('user-1')
  })
})
