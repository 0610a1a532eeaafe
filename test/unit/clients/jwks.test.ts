import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type JWK, exportJWK, generateKeyPair } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ClientKeyOwner,
  type ClientKeySourceOptions,
  createClientKeySource,
  publicSignatureKeys,
} from '../../../src/clients/jwks.ts'
import { OAuthError } from '../../../src/errors.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { storeLimiter } from '../../../src/security/throttle.ts'

const NOW = 1_800_000_000
const URI = 'https://client.example.test/jwks'
/** Text put into every bad body: no error may ever repeat it. */
const MARKER = 'BODY-MARKER-31c9'

async function publicJwk(alg: string, kid: string): Promise<JWK> {
  const { publicKey } = await generateKeyPair(alg)
  return { ...(await exportJWK(publicKey)), kid }
}
const es = await publicJwk('ES256', 'es')
const ed = await publicJwk('EdDSA', 'ed')
const { privateKey: esPrivate } = await generateKeyPair('ES256', { extractable: true })
const privateJwk = { ...(await exportJWK(esPrivate)), kid: 'private' }

const host = (jwksUri: string): ClientKeyOwner => ({ clientId: 'host', jwksUri })
const self = (jwksUri: string): ClientKeyOwner => ({ clientId: 'self', jwksUri, registration: { kind: 'dynamic' } })

function jwks(keys: unknown[], headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ keys }), { headers: { 'content-type': 'application/json', ...headers } })
}

/** A key source over a fetch stub with a controllable clock; `calls` lists the URLs fetched. */
function source(
  respond: (url: string, init: RequestInit) => Response | Promise<Response> = () => jwks([es]),
  options: Partial<ClientKeySourceOptions> = {},
) {
  let time = NOW
  const calls: { url: string; init: RequestInit }[] = []
  const keys = createClientKeySource({
    now: () => time,
    fetch: async (url, init) => {
      calls.push({ url, init })
      return respond(url, init)
    },
    ...options,
  })
  const advance = (seconds: number) => {
    time += seconds
  }
  return { keysFor: keys.keysFor, calls, advance }
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(OAuthError)
  expect((err as OAuthError).code).toBe('invalid_client')
  expect((err as OAuthError).message).not.toContain(MARKER)
  return (err as OAuthError).message
}

describe('inline jwks', () => {
  it('returns the signature keys, leaving out encryption-only ones', async () => {
    const { keysFor, calls } = source()
    const enc = { ...ed, kid: 'enc', use: 'enc' }
    const wrap = { ...ed, kid: 'wrap', key_ops: ['wrapKey'] }
    await expect(keysFor({ clientId: 'c', jwks: { keys: [es, enc, wrap, ed] } })).resolves.toEqual([es, ed])
    expect(calls).toHaveLength(0)
  })

  it.each([
    ['a private key', () => [es, privateJwk]],
    ['a symmetric key', () => [{ kty: 'oct', k: 'c2VjcmV0', kid: 'hs' }]],
  ])('refuses a set holding %s', async (_name, keys) => {
    const { keysFor } = source()
    expect(await refusal(keysFor({ clientId: 'c', jwks: { keys: keys() } }))).toBe(
      'the client keys hold private or symmetric key material',
    )
  })

  it.each([[{ keys: 'x' }], [{}], [[]], [{ keys: [null] }], [{ keys: [{ kid: 'no-kty' }] }]])(
    'refuses %j as not a JWK set',
    (value) => {
      expect(() => publicSignatureKeys(value)).toThrow('the client keys are not a JWK set')
    },
  )

  it('refuses a client with both jwks and jwks_uri, or neither', async () => {
    const { keysFor } = source()
    expect(await refusal(keysFor({ clientId: 'c', jwks: { keys: [es] }, jwksUri: URI }))).toBe(
      'the client has both jwks and jwks_uri',
    )
    expect(await refusal(keysFor({ clientId: 'c' }))).toBe('the client has no jwks nor jwks_uri')
  })
})

describe('jwks_uri', () => {
  it('is fetched once (GET, no redirects, no credentials) and cached for cacheTtl', async () => {
    const { keysFor, calls, advance } = source()
    const all = await Promise.all([keysFor(host(URI)), keysFor(host(URI)), keysFor(self(URI))])
    expect(all).toEqual([[es], [es], [es]])
    // Host and self-registered clients never share an entry: two fetches, not three.
    expect(calls.map((call) => call.url)).toEqual([URI, URI])
    expect(calls[0]?.init).toMatchObject({ method: 'GET', redirect: 'manual', credentials: 'omit' })
    advance(299)
    await keysFor(host(URI))
    expect(calls).toHaveLength(2)
    advance(1)
    await keysFor(host(URI))
    expect(calls).toHaveLength(3)
  })

  it('refetches on request (an unknown kid) at most once per 30 s', async () => {
    const { keysFor, calls, advance } = source()
    await keysFor(host(URI))
    await keysFor(host(URI), { refresh: true })
    expect(calls).toHaveLength(1)
    advance(30)
    await keysFor(host(URI), { refresh: true })
    await keysFor(host(URI), { refresh: true })
    expect(calls).toHaveLength(2)
  })

  it('remembers a failure for 30 s (no refetch storm), then tries again', async () => {
    let status = 500
    const { keysFor, calls, advance } = source(() => (status === 200 ? jwks([es]) : new Response(MARKER, { status })))
    expect(await refusal(keysFor(host(URI)))).toBe('fetching the client jwks_uri failed with HTTP 500')
    expect(await refusal(keysFor(host(URI), { refresh: true }))).toBe(
      'fetching the client jwks_uri failed with HTTP 500',
    )
    expect(calls).toHaveLength(1)
    status = 200
    advance(30)
    await expect(keysFor(host(URI))).resolves.toEqual([es])
    expect(calls).toHaveLength(2)
  })

  it('a failed refetch keeps the cached set', async () => {
    let fail = false
    const { keysFor, advance } = source(() => (fail ? new Response('', { status: 503 }) : jwks([es])))
    await keysFor(host(URI))
    fail = true
    advance(30)
    await refusal(keysFor(host(URI), { refresh: true }))
    await expect(keysFor(host(URI))).resolves.toEqual([es])
  })

  it.each([
    [
      'a redirect',
      () => new Response(null, { status: 302, headers: { location: URI } }),
      'the client jwks_uri redirects; redirects are not followed',
    ],
    ['HTTP 404', () => new Response(MARKER, { status: 404 }), 'fetching the client jwks_uri failed with HTTP 404'],
    [
      'text/html',
      () => new Response(MARKER, { headers: { 'content-type': 'text/html' } }),
      'the client jwks_uri is not application/json',
    ],
    [
      'invalid JSON',
      () => new Response(`{"keys": [${MARKER}`, { headers: { 'content-type': 'application/json' } }),
      'the client jwks_uri document is not valid JSON',
    ],
    ['a private key', () => jwks([privateJwk]), 'the client keys hold private or symmetric key material'],
    ['a rejected fetch', () => Promise.reject(new TypeError(MARKER)), 'the client jwks_uri could not be fetched'],
  ])('refuses %s', async (_name, respond, description) => {
    const { keysFor } = source(respond)
    expect(await refusal(keysFor(host(URI)))).toBe(description)
  })

  it('accepts application/jwk-set+json', async () => {
    const { keysFor } = source(() => jwks([es], { 'content-type': 'application/jwk-set+json; charset=utf-8' }))
    await expect(keysFor(host(URI))).resolves.toEqual([es])
  })
})

describe('jwks_uri bounds', () => {
  const big = JSON.stringify({ keys: [es], pad: 'x'.repeat(2000) })

  it('refuses a body over maxBytes, declared or streamed', async () => {
    let cancelled = false
    const declared = source(
      () =>
        new Response(
          new ReadableStream({
            cancel: () => {
              cancelled = true
            },
          }),
          { headers: { 'content-type': 'application/json', 'content-length': '2048' } },
        ),
      { maxBytes: 1024 },
    )
    expect(await refusal(declared.keysFor(host(URI)))).toBe('the client jwks_uri document is larger than 1024 bytes')
    expect(cancelled).toBe(true)
    const streamed = source(() => new Response(big, { headers: { 'content-type': 'application/json' } }), {
      maxBytes: 1024,
    })
    expect(await refusal(streamed.keysFor(host(URI)))).toBe('the client jwks_uri document is larger than 1024 bytes')
  })

  it('gives up after timeoutMs, for the response and for the body', async () => {
    let aborted = false
    const never = source(
      (_url, init) =>
        new Promise<Response>(() => {
          init.signal?.addEventListener('abort', () => {
            aborted = true
          })
        }),
      { timeoutMs: 20 },
    )
    expect(await refusal(never.keysFor(host(URI)))).toBe('fetching the client jwks_uri timed out')
    expect(aborted).toBe(true)
    const stalled = source(
      () =>
        new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"keys":')) }), {
          headers: { 'content-type': 'application/json' },
        }),
      { timeoutMs: 20 },
    )
    expect(await refusal(stalled.keysFor(host(URI)))).toBe('fetching the client jwks_uri timed out')
  })
})

describe('jwks_uri: who may fetch what', () => {
  it.each(['http://client.example.test/jwks', 'http://10.0.0.1/jwks', 'ftp://client.example.test/jwks'])(
    'a host client needs https except toward loopback: %s is refused',
    async (uri) => {
      const { keysFor, calls } = source()
      expect(await refusal(keysFor(host(uri)))).toBe('the client jwks_uri must use https')
      expect(calls).toHaveLength(0)
    },
  )

  it.each(['http://127.0.0.1:8080/jwks', 'http://localhost:8080/jwks', 'http://[::1]/jwks', 'https://10.0.0.1/jwks'])(
    'a host client may use %s (trusted like the rest of its registration)',
    async (uri) => {
      const { keysFor, calls } = source()
      await expect(keysFor(host(uri))).resolves.toEqual([es])
      expect(calls.map((call) => call.url)).toEqual([uri])
    },
  )

  it.each([
    ['http://127.0.0.1/jwks', 'the client jwks_uri must use https'],
    ['https://127.0.0.1/jwks', 'the client jwks_uri is on a private or local address'],
    ['https://[::1]/jwks', 'the client jwks_uri is on a private or local address'],
    ['https://10.1.2.3/jwks', 'the client jwks_uri is on a private or local address'],
    ['https://169.254.169.254/latest', 'the client jwks_uri is on a private or local address'],
    ['https://[fd00::1]/jwks', 'the client jwks_uri is on a private or local address'],
    ['https://localhost/jwks', 'the client jwks_uri is on a private or local address'],
    ['https://api.localhost/jwks', 'the client jwks_uri is on a private or local address'],
    ['https://user:pw@client.example.test/jwks', 'the client jwks_uri has user info'],
  ])('a self-registered client may not use %s', async (uri, description) => {
    const { keysFor, calls } = source()
    expect(await refusal(keysFor(self(uri)))).toBe(description)
    expect(calls).toHaveLength(0)
  })

  it('a self-registered client: every resolved address must be public', async () => {
    const resolved: Record<string, string[]> = {
      'public.example.test': ['93.184.216.34', '2606:2800:220:1::1'],
      'mixed.example.test': ['93.184.216.34', '10.0.0.5'],
      'nowhere.example.test': [],
    }
    const { keysFor, calls } = source(undefined, { resolveHost: async (name) => resolved[name] ?? [] })
    await expect(keysFor(self('https://public.example.test/jwks'))).resolves.toEqual([es])
    expect(await refusal(keysFor(self('https://mixed.example.test/jwks')))).toBe(
      'the client jwks_uri is on a private or local address',
    )
    expect(await refusal(keysFor(self('https://nowhere.example.test/jwks')))).toBe(
      'the client jwks_uri host could not be resolved',
    )
    expect(calls.map((call) => call.url)).toEqual(['https://public.example.test/jwks'])
  })

  it('a custom guard replaces the default one', async () => {
    const seen: string[] = []
    const guard = async (url: URL) => {
      seen.push(url.hostname)
      if (url.hostname === 'blocked.example.test') throw new OAuthError('invalid_client', 'blocked by policy')
    }
    const { keysFor } = source(undefined, { guard })
    await expect(keysFor(self('https://ok.example.test/jwks'))).resolves.toEqual([es])
    expect(await refusal(keysFor(self('https://blocked.example.test/jwks')))).toBe('blocked by policy')
    expect(seen).toEqual(['ok.example.test', 'blocked.example.test'])
  })
})

describe('jwks_uri over a real loopback server (global fetch)', () => {
  let server: Server
  let origin: string
  const hits: string[] = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? '')
      if (req.url === '/jwks') {
        res.writeHead(200, { 'content-type': 'application/jwk-set+json' })
        res.end(JSON.stringify({ keys: [es, ed] }))
      } else if (req.url === '/redirect') {
        res.writeHead(302, { location: '/jwks' })
        res.end()
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write(`{"keys":[],"pad":"${MARKER}`)
        const timer = setInterval(() => res.write('x'.repeat(16_384)), 1)
        res.on('close', () => clearInterval(timer))
      }
      // '/slow' never answers.
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  const real = () => createClientKeySource({ now: () => NOW, timeoutMs: 300 })

  it('a host client reads its loopback jwks_uri', async () => {
    await expect(real().keysFor(host(`${origin}/jwks`))).resolves.toEqual([es, ed])
  })

  it('a redirect is not followed', async () => {
    hits.length = 0
    expect(await refusal(real().keysFor(host(`${origin}/redirect`)))).toBe(
      'the client jwks_uri redirects; redirects are not followed',
    )
    expect(hits).toEqual(['/redirect'])
  })

  it('an endless body stops at 64 KiB; a silent server at the timeout', async () => {
    expect(await refusal(real().keysFor(host(`${origin}/big`)))).toBe(
      'the client jwks_uri document is larger than 65536 bytes',
    )
    expect(await refusal(real().keysFor(host(`${origin}/slow`)))).toBe('fetching the client jwks_uri timed out')
  })

  it('the same loopback URI is refused for a self-registered client, without a request', async () => {
    hits.length = 0
    const uri = `${origin.replace('http:', 'https:')}/jwks`
    expect(await refusal(real().keysFor(self(uri)))).toBe('the client jwks_uri is on a private or local address')
    expect(hits).toEqual([])
  })
})

describe('#27 item 9 jwks_uri fetches of self-registered clients have a per-host budget', () => {
  /** A key source whose self-registered fetches count in a store limiter (window 900 s, 4 a host). */
  function budgeted(respond?: (url: string) => Response) {
    let time = NOW
    const store = createMemoryStore({ now: () => time })
    const made = source(respond, {
      now: () => time,
      limiter: storeLimiter(store, { readTtl: 0 }),
      window: 900,
      fetchesPerHost: 4,
      guard: async () => {},
    })
    const advance = (seconds: number) => {
      time += seconds
      made.advance(seconds)
    }
    return { ...made, advance }
  }
  const path = (i: number) => `${URI}/${i}`

  it('#27 item 9 many jwks_uri paths on one host: fetched up to the budget, then refused without a fetch', async () => {
    const { keysFor, calls } = budgeted()
    for (let i = 0; i < 4; i++) await expect(keysFor(self(path(i)))).resolves.toEqual([es])
    expect(await refusal(keysFor(self(path(4))))).toBe('too many client jwks_uri fetches for this host; retry later')
    expect(calls).toHaveLength(4)
    // Another host has its own budget; a host-registered client's URI is not budgeted.
    await expect(keysFor(self('https://other.example.test/jwks'))).resolves.toEqual([es])
    await expect(keysFor(host(path(5)))).resolves.toEqual([es])
    expect(calls).toHaveLength(6)
  })

  it('#27 item 9 a failed fetch counts two', async () => {
    const { keysFor, calls } = budgeted(() => new Response('', { status: 500 }))
    await refusal(keysFor(self(path(0))))
    await refusal(keysFor(self(path(1))))
    expect(await refusal(keysFor(self(path(2))))).toBe('too many client jwks_uri fetches for this host; retry later')
    expect(calls).toHaveLength(2)
  })

  it('#27 item 9 when the budget is spent, a set fetched before is used past its lifetime (stale on throttle)', async () => {
    const { keysFor, calls, advance } = budgeted()
    await keysFor(self(path(0)))
    for (let i = 1; i < 4; i++) await keysFor(self(path(i)))
    advance(301)
    await expect(keysFor(self(path(0)))).resolves.toEqual([es])
    expect(calls).toHaveLength(4)
    // The next window: fetched again.
    advance(900)
    await keysFor(self(path(0)))
    expect(calls).toHaveLength(5)
  })
})
