/**
 * #28 item 3: outbound fetches (Client ID Metadata Documents, a client's `jwks_uri`) on workerd.
 * workerd has no `redirect: 'error'` (it throws a TypeError) and no DNS API: the fetches ask for
 * `redirect: 'manual'` and refuse any 3xx as a redirect, and private literal hosts are refused
 * before any fetch. The fetch double behaves as workerd's does (checked against workerd 1.2026:
 * `'error'` throws "Invalid redirect value…", `'manual'` returns the 302 with type `default`,
 * `'follow'` follows).
 */
import { type JWK, exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it } from 'vitest'
import { type ClientKeyOwner, createClientKeySource } from '../../../src/clients/jwks.ts'
import { OAuthError } from '../../../src/errors.ts'
import { ISSUER, RU, form, makeService } from '../../helpers/service.ts'

const TOOL = 'https://tool.example.test/oauth/client.json'
const MOVED = 'https://tool.example.test/oauth/moved.json'
const KEYS = 'https://keys.example.test/jwks'
const MOVED_KEYS = 'https://keys.example.test/moved'

const { publicKey } = await generateKeyPair('ES256')
const key: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }

const documents: Record<string, () => Response> = {
  [TOOL]: () =>
    Response.json({ client_id: TOOL, client_name: 'Tool', redirect_uris: [RU], token_endpoint_auth_method: 'none' }),
  [KEYS]: () => Response.json({ keys: [key] }),
}
const redirects: Record<string, string> = { [MOVED]: TOOL, [MOVED_KEYS]: KEYS }

/** A fetch as workerd's: no `redirect: 'error'`, a 3xx answered as is under `'manual'`. */
function workerdFetch() {
  const calls: { url: string; redirect: RequestRedirect | undefined }[] = []
  const fetch = async (url: string, init: RequestInit = {}): Promise<Response> => {
    calls.push({ url, redirect: init.redirect })
    if (init.redirect === 'error') {
      throw new TypeError(
        'Invalid redirect value, must be one of "follow" or "manual" ("error" won\'t be implemented since it does not make sense at the edge; use "manual" and check the response status code).',
      )
    }
    let target = url
    const location = redirects[url]
    if (location !== undefined) {
      if (init.redirect === 'manual') return new Response(null, { status: 302, headers: { location } })
      target = location // 'follow', the default
    }
    const respond = documents[target]
    return respond ? respond() : new Response('not here', { status: 404, headers: { 'content-type': 'text/plain' } })
  }
  return { calls, fetch }
}

async function service() {
  const { calls, fetch } = workerdFetch()
  const made = await makeService({ scopes: ['mcp:tools'], clientIdMetadataDocuments: { scopes: ['mcp:tools'], fetch } })
  return { ...made, calls }
}

async function authorize(ctx: Awaited<ReturnType<typeof service>>, clientId: string) {
  const url = new URL(`${ISSUER}/connect/authorize`)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: RU,
    scope: 'mcp:tools',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString()
  const response = await ctx.service.fetch(new Request(url, { redirect: 'manual' }))
  return { status: response.status, html: await response.text() }
}

async function token(ctx: Awaited<ReturnType<typeof service>>, clientId: string) {
  const response = await ctx.service.fetch(
    form(`${ISSUER}/connect/token`, {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: 'x'.repeat(43),
      redirect_uri: RU,
      code_verifier: 'v'.repeat(43),
    }),
  )
  return { status: response.status, body: (await response.json()) as { error: string; error_description?: string } }
}

describe('#28 item 3: outbound fetches with a workerd-like fetch', () => {
  it('#28 item 3: a client metadata document is fetched with redirect: manual and works for a 200', async () => {
    const ctx = await service()
    const page = await authorize(ctx, TOOL)
    expect(page.status).toBe(303) // on to the sign-in page: the document was read
    expect(ctx.calls).toEqual([{ url: TOOL, redirect: 'manual' }])
  })

  it('#28 item 3: a redirecting metadata document URL is refused as a redirect (not followed, not a 500)', async () => {
    const ctx = await service()
    const page = await authorize(ctx, MOVED)
    expect(page.status).toBe(502)
    expect(page.html).toContain('redirects are not followed')
    const answer = await token(ctx, MOVED)
    expect(answer.status).toBe(401)
    expect(answer.body.error).toBe('invalid_client')
    expect(ctx.calls.map((call) => call.url)).not.toContain(TOOL)
    expect(ctx.calls.every((call) => call.redirect === 'manual')).toBe(true)
  })

  it('#28 item 3: a private literal host is refused before any fetch (no DNS needed)', async () => {
    const ctx = await service()
    for (const url of [
      'https://10.0.0.8/client.json',
      'https://[::1]/client.json',
      'https://169.254.169.254/latest/client.json',
    ]) {
      const page = await authorize(ctx, url)
      expect(page.status).toBe(400)
      expect(page.html).toContain('private or local address')
    }
    expect(ctx.calls).toEqual([])
  })

  const self = (jwksUri: string): ClientKeyOwner => ({ clientId: 'self', jwksUri, registration: { kind: 'dynamic' } })

  it('#28 item 3: a jwks_uri is fetched with redirect: manual and works for a 200', async () => {
    const { calls, fetch } = workerdFetch()
    const keys = createClientKeySource({ now: () => 1_800_000_000, fetch })
    await expect(keys.keysFor(self(KEYS))).resolves.toEqual([key])
    expect(calls).toEqual([{ url: KEYS, redirect: 'manual' }])
  })

  it('#28 item 3: a redirecting jwks_uri is refused as a redirect, and a private literal one is never fetched', async () => {
    const { calls, fetch } = workerdFetch()
    const keys = createClientKeySource({ now: () => 1_800_000_000, fetch })
    const moved = await keys.keysFor(self(MOVED_KEYS)).catch((err: unknown) => err)
    expect(moved).toBeInstanceOf(OAuthError)
    expect((moved as OAuthError).code).toBe('invalid_client')
    expect((moved as OAuthError).message).toBe('the client jwks_uri redirects; redirects are not followed')
    const local = await keys.keysFor(self('https://192.168.1.1/jwks')).catch((err: unknown) => err)
    expect((local as OAuthError).message).toBe('the client jwks_uri is on a private or local address')
    expect(calls).toEqual([{ url: MOVED_KEYS, redirect: 'manual' }])
  })
})
