/**
 * #44 item 2: what one code redemption and one refresh cost on Redis, counted on the client through
 * the service in process: the commands ioredis sends (`sendCommand`, scripts as EVALSHA) and the
 * waits in sequence (a command sent while none of this store's is in flight). Pinned so that a
 * change which adds a command or a round trip to either grant fails here.
 */
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorizationUrl, authorize, setup } from '../helpers/flow.ts'
import { RU, clock, form } from '../helpers/service.ts'
import { createRedisStore } from '../../src/storage/redis.ts'
import { REDEEM, ROTATE_UNLESS_REVOKED } from '../../src/storage/redis_redeem.ts'
import { uniqueId } from './contract.ts'

const url = process.env.REDIS_URL

/** The commands (name and the script's name for EVALSHA) sent under `prefix` since the last `reset`. */
const seen = { commands: [] as string[], waits: 0, inFlight: 0 }

describe.runIf(url)('#44 item 2 commands per grant on Redis', () => {
  const prefix = `${uniqueId('gh-hot')}:`
  const time = clock()
  const store = createRedisStore({ url: url as string, prefix, now: time.now })
  const send = Redis.prototype.sendCommand

  beforeAll(async () => {
    // Every command of every Redis client in this file goes through here: only this store's keys count.
    Redis.prototype.sendCommand = function (this: Redis, command, stream) {
      const args = (command as unknown as { args: unknown[] }).args.map(String)
      if (args.some((arg) => arg.startsWith(prefix))) {
        const name = (command as unknown as { name: string }).name
        seen.commands.push(name === 'evalsha' ? `evalsha ${scriptNames.get(args[0] as string) ?? '?'}` : name)
        if (seen.inFlight++ === 0) seen.waits++
        const done = () => void seen.inFlight--
        ;(command as unknown as { promise: Promise<unknown> }).promise.then(done, done)
      }
      return send.call(this, command, stream)
    } as typeof send
    await store.connect()
  })
  afterAll(async () => {
    Redis.prototype.sendCommand = send
    await store.clear()
    await store.close()
  })

  /** The store's scripts by SHA-1, to name them in the counts. */
  const sha = (lua: string) => createHash('sha1').update(lua).digest('hex')
  const scriptNames = new Map([
    [sha(REDEEM), 'redeem'],
    [sha(ROTATE_UNLESS_REVOKED), 'rotateUnlessRevoked'],
  ])

  function reset(): void {
    seen.commands = []
    seen.waits = 0
  }

  async function round(ctx: Awaited<ReturnType<typeof setup>>) {
    const request = await authorizationUrl(ctx.as, { scope: 'openid offline_access api1' })
    const callback = await authorize(ctx.browser, request.url)
    const token = (fields: Record<string, string>) =>
      ctx.service.fetch(
        form(ctx.as.token_endpoint as string, { ...fields, client_id: 'web', client_secret: 'web-secret' }),
      )
    reset()
    const redeemed = await token({
      grant_type: 'authorization_code',
      redirect_uri: RU,
      code: callback.searchParams.get('code') as string,
      code_verifier: request.verifier,
    })
    expect(redeemed.status).toBe(200)
    const code = { commands: [...seen.commands], waits: seen.waits }
    const { refresh_token } = (await redeemed.json()) as { refresh_token: string }
    reset()
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token })
    expect(refreshed.status).toBe(200)
    return { code, refresh: { commands: [...seen.commands], waits: seen.waits } }
  }

  it('#44 item 2: at the instance that wrote the code and the token, a code redemption sends 1 command (one script), a refresh 1', async () => {
    const ctx = await setup({ store, now: time.now })
    await round(ctx) // loads the scripts (EVALSHA after a first EVAL), fills the client cache
    const { code, refresh } = await round(ctx)
    expect(code).toEqual({ commands: ['evalsha redeem'], waits: 1 })
    expect(refresh).toEqual({ commands: ['evalsha rotateUnlessRevoked'], waits: 1 })
  })

  it('#44 item 2: at another instance (issuedRecordCache: 0), a code redemption sends 2 commands in 2 round trips (read, one script), a refresh 2 in 2', async () => {
    const ctx = await setup({ store, now: time.now, issuedRecordCache: 0 })
    await round(ctx)
    const { code, refresh } = await round(ctx)
    console.info(`#44 item 2 code redemption: ${JSON.stringify(code)}`)
    console.info(`#44 item 2 refresh: ${JSON.stringify(refresh)}`)
    expect(code).toEqual({ commands: ['hmget', 'evalsha redeem'], waits: 2 })
    expect(refresh).toEqual({ commands: ['hmget', 'evalsha rotateUnlessRevoked'], waits: 2 })
  })
})
