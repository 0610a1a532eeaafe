/**
 * #44: the codes and refresh tokens an instance wrote are redeemed without reading them back from
 * the store (src/storage/issued_records.ts), and nothing that the store decides changes: whether
 * a code or token was consumed (on any instance) and whether its family was revoked. Two
 * instances share one store; `a` issues, `b` never saw what `a` wrote.
 */
import * as oauth from 'oauth4webapi'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type Instance,
  authorizationUrl,
  authorize,
  redeemCallback,
  setup,
  signIn,
  webAuth,
  webClient,
} from '../../helpers/flow.ts'
import { RU, clock } from '../../helpers/service.ts'
import { STORES, type TestStore } from '../../helpers/stores.ts'
import type { Store } from '../../../src/storage/types.ts'

/** Counts the store's reads of codes and refresh tokens. */
function countReads(store: Store): { codes: number; refreshTokens: number } {
  const reads = { codes: 0, refreshTokens: 0 }
  const getCode = store.codes.get.bind(store.codes)
  const getToken = store.refreshTokens.get.bind(store.refreshTokens)
  store.codes.get = (id) => {
    reads.codes++
    return getCode(id)
  }
  store.refreshTokens.get = (id) => {
    reads.refreshTokens++
    return getToken(id)
  }
  return reads
}

type Tokens = { access_token: string; refresh_token: string }

async function refresh(instance: Instance, token: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await oauth.refreshTokenGrantRequest(instance.as, webClient, webAuth, token, instance.opts)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

async function expectDead(instances: Instance[], tokens: Tokens): Promise<void> {
  for (const instance of instances) {
    const introspected = await oauth.introspectionRequest(
      instance.as,
      webClient,
      webAuth,
      tokens.access_token,
      instance.opts,
    )
    expect(await introspected.json()).toEqual({ active: false })
    expect(await refresh(instance, tokens.refresh_token)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
  }
}

/** A code issued at `a` (signed in there) and redeemed at `b`: its request, callback and the tokens `b` gave. */
async function redeemedElsewhere(a: Instance, b: Instance) {
  const request = await authorizationUrl(a.as, { scope: 'openid offline_access' })
  const callback = await authorize(a.browser, request.url)
  const won = await redeemCallback(b, callback, request)
  expect(won.response.status).toBe(200)
  return { request, callback, tokens: (await won.response.json()) as Tokens }
}

/** A refresh token written at `a` (signed in there) and rotated at `b`: the first and the rotation's answer. */
async function rotatedElsewhere(
  a: Instance,
  b: Instance,
): Promise<{ first: string; rotated: { status: number; body: Record<string, unknown> } }> {
  const { result } = await signIn(a, { scope: 'openid offline_access' })
  const first = result.refresh_token as string
  const rotated = await refresh(b, first)
  expect(rotated.status).toBe(200)
  return { first, rotated }
}

describe.each(STORES)('#44 records the instance wrote, on the $name store', (kind) => {
  let opened: TestStore | undefined
  afterEach(async () => {
    await opened?.dispose()
    opened = undefined
  })

  async function instances(): Promise<{ a: Instance; b: Instance; reads: ReturnType<typeof countReads> }> {
    const time = clock()
    opened = await kind.create(time.now)
    const reads = countReads(opened.store)
    const a = await setup({ store: opened.store, now: time.now })
    const b = await setup({ store: opened.store, now: time.now })
    return { a, b, reads }
  }

  // The memory store keeps no second copy (its reads are in process): every redemption reads it.
  const kept = kind.name === 'memory' ? 1 : 0

  it('the issuing instance redeems its code and rotates its refresh token without reading them from the store (but on the memory store); another instance reads them', async () => {
    const { a, b, reads } = await instances()
    const { result } = await signIn(a, { scope: 'openid offline_access api1' })
    expect(reads).toEqual({ codes: kept, refreshTokens: 0 })
    const first = await refresh(a, result.refresh_token as string)
    expect(first.status).toBe(200)
    expect(reads).toEqual({ codes: kept, refreshTokens: kept })
    const second = await refresh(b, first.body.refresh_token as string)
    expect(second.status).toBe(200)
    expect(reads.refreshTokens).toBe(kept + 1)
    const request = await authorizationUrl(a.as, { scope: 'openid offline_access' })
    const callback = await authorize(a.browser, request.url)
    const { response } = await redeemCallback(b, callback, request)
    expect(response.status).toBe(200)
    expect(reads.codes).toBe(kept + 1)
  })

  it('issuedRecordCache: 0 reads every code and refresh token from the store', async () => {
    const time = clock()
    opened = await kind.create(time.now)
    const reads = countReads(opened.store)
    const a = await setup({ store: opened.store, now: time.now, issuedRecordCache: 0 })
    const { result } = await signIn(a, { scope: 'openid offline_access' })
    expect((await refresh(a, result.refresh_token as string)).status).toBe(200)
    expect(reads).toEqual({ codes: 1, refreshTokens: 1 })
  })

  it('CODE-02 CODE-03: a code redeemed on another instance and then replayed where it was issued is refused, and the replay revokes what the first redemption got', async () => {
    const { a, b } = await instances()
    const { request, callback, tokens } = await redeemedElsewhere(a, b)
    const replay = await redeemCallback(a, callback, request)
    expect(replay.response.status).toBe(400)
    expect(await replay.response.json()).toMatchObject({ error: 'invalid_grant' })
    await expectDead([a, b], tokens)
  })

  it('RT-08: a refresh token rotated on another instance and then reused where it was issued is refused, and the reuse revokes the family', async () => {
    const { a, b } = await instances()
    const { first, rotated } = await rotatedElsewhere(a, b)
    // Introspection reads the store, whichever instance holds the record: consumed is inactive.
    const introspected = await oauth.introspectionRequest(a.as, webClient, webAuth, first, a.opts)
    expect(await introspected.json()).toEqual({ active: false })
    const reused = await refresh(a, first)
    expect(reused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } })
    await expectDead([a, b], rotated.body as Tokens)
  })

  it('CODE-03: a code redeemed on another instance and replayed where it was issued with a request that fails a later check (a resource it may not have) is still the replay: invalid_grant, and what the first redemption got is revoked', async () => {
    const { a, b } = await instances()
    const { request, callback, tokens } = await redeemedElsewhere(a, b)
    const params = oauth.validateAuthResponse(a.as, webClient, callback, request.state ?? oauth.expectNoState)
    const replay = await oauth.authorizationCodeGrantRequest(a.as, webClient, webAuth, params, RU, request.verifier, {
      ...a.opts,
      additionalParameters: { resource: 'https://elsewhere.example.test/' },
    })
    expect(replay.status).toBe(400)
    expect(await replay.json()).toMatchObject({
      error: 'invalid_grant',
      error_description: 'the code has already been used',
    })
    await expectDead([a, b], tokens)
  })

  it('RT-08: a refresh token rotated on another instance and reused where it was issued with a request that fails a later check (a scope beyond the grant) is still the reuse: invalid_grant, and the family is revoked', async () => {
    const { a, b } = await instances()
    const { first, rotated } = await rotatedElsewhere(a, b)
    const reused = await oauth.refreshTokenGrantRequest(a.as, webClient, webAuth, first, {
      ...a.opts,
      additionalParameters: { scope: 'openid email' },
    })
    expect(reused.status).toBe(400)
    expect(await reused.json()).toMatchObject({
      error: 'invalid_grant',
      error_description: 'the refresh token has already been used',
    })
    await expectDead([a, b], rotated.body as Tokens)
  })

  it('RT-08: a refresh token rotated on another instance and reused where it was issued after its family was revoked is reported as the reuse it is', async () => {
    const { a, b } = await instances()
    const { first, rotated } = await rotatedElsewhere(a, b)
    await oauth.revocationRequest(b.as, webClient, webAuth, rotated.body.refresh_token as string, b.opts)
    expect(await refresh(a, first)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'the refresh token has already been used' },
    })
  })

  it('RT-09: a refresh token revoked on another instance is refused where it was issued', async () => {
    const { a, b } = await instances()
    const { result } = await signIn(a, { scope: 'openid offline_access' })
    const revoked = await oauth.revocationRequest(b.as, webClient, webAuth, result.refresh_token as string, b.opts)
    expect(revoked.status).toBe(200)
    expect(await refresh(a, result.refresh_token as string)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    })
  })

  it('CODE-05: a failed redemption where the code was issued burns nothing: the rightful one then succeeds there', async () => {
    const { a } = await instances()
    const request = await authorizationUrl(a.as, { scope: 'openid' })
    const callback = await authorize(a.browser, request.url)
    const wrong = await redeemCallback(a, callback, request, { redirectUri: 'https://rp.example.test/other' })
    expect(wrong.response.status).toBe(400)
    expect(await wrong.response.json()).toMatchObject({ error: 'invalid_grant' })
    const right = await redeemCallback(a, callback, request)
    expect(right.response.status).toBe(200)
  })
})
