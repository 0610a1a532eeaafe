/**
 * security/callback_post: the callback URLs a client may have (back-channel logout, CIBA ping) and
 * one bounded POST's outcomes, shared by both deliveries (they were two copies, #41).
 */
import { describe, expect, it } from 'vitest'
import { callbackUrl, postCallback } from '../../../src/security/index.ts'

const post = (fetch: (url: string, init: RequestInit) => Promise<Response>, extra: { guarded?: boolean } = {}) =>
  postCallback({
    url: new URL('https://rp.example.test/cb'),
    headers: { 'content-type': 'application/json' },
    body: '{}',
    timeout: 0.05,
    guarded: extra.guarded ?? false,
    outbound: { fetch },
  })

describe('security/callback_post', () => {
  it('callbackUrl: https; http only on loopback for a host-registered client; no credentials or fragment', () => {
    expect(callbackUrl('https://rp.example.test/cb', true)?.href).toBe('https://rp.example.test/cb')
    expect(callbackUrl('http://127.0.0.1:4000/cb', false)?.href).toBe('http://127.0.0.1:4000/cb')
    expect(callbackUrl('http://127.0.0.1:4000/cb', true)).toBeUndefined()
    expect(callbackUrl('http://rp.example.test/cb', false)).toBeUndefined()
    expect(callbackUrl('https://u:p@rp.example.test/cb', false)).toBeUndefined()
    expect(callbackUrl('https://rp.example.test/cb#x', false)).toBeUndefined()
    expect(callbackUrl(undefined, false)).toBeUndefined()
    expect(callbackUrl('not a url', false)).toBeUndefined()
  })

  it('postCallback: the status, a time-out, a network failure, a refused address; the body is the one given', async () => {
    let seen: RequestInit | undefined
    expect(
      await post(async (_url, init) => {
        seen = init
        return new Response('ignored', { status: 503 })
      }),
    ).toEqual({ status: 503, opaqueRedirect: false })
    expect(seen).toMatchObject({ method: 'POST', redirect: 'manual', credentials: 'omit', body: '{}' })
    expect(await post(() => new Promise<Response>(() => {}))).toBe('timeout')
    expect(await post(async () => Promise.reject(new TypeError('fetch failed')))).toBe('network')
    // Guarded: a private literal address is refused before any request.
    let called = false
    const refused = await postCallback({
      url: new URL('https://10.0.0.1/cb'),
      headers: {},
      body: '',
      timeout: 1,
      guarded: true,
      outbound: {
        fetch: async () => {
          called = true
          return new Response(null)
        },
      },
    })
    expect(refused).toBe('refused')
    expect(called).toBe(false)
  })
})
