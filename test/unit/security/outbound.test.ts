/**
 * #39 item 5: `fetchPublic` decides how a request to a URL a self-registered client chose goes
 * out: literal hosts checked as they are, host names only through the runtime's pinning
 * `outboundFetch`, the host's own `fetch`, or the `allowUnpinnedHostNames` opt-in.
 */
import { describe, expect, it } from 'vitest'
import { type OutboundFetch, type OutboundOptions, fetchPublic } from '../../../src/security/outbound.ts'

/** Runs `fetchPublic` and says which way it went. */
async function decide(url: string, options: (calls: string[]) => OutboundOptions) {
  const calls: string[] = []
  const result = await fetchPublic(new URL(url), {}, options(calls))
  return { result: 'response' in result ? await result.response.text() : result, calls }
}

const plain = (calls: string[], name: string) => async (url: string) => {
  calls.push(`${name} ${url}`)
  return new Response(name)
}
/** A pinning fetch double: "resolves" to `addresses` and asks `allowAddress` for each. */
const pinning =
  (calls: string[], addresses: string[]): OutboundFetch =>
  async (url, _init, allowAddress) => {
    calls.push(`outbound ${url}`)
    if (!addresses.every((address) => allowAddress(address))) throw new Error('refused by the runtime')
    return new Response('outbound')
  }

describe('#39 item 5 fetchPublic', () => {
  it.each([
    ['https://10.0.0.5/x', 'a private literal'],
    ['https://127.0.0.1/x', 'a loopback literal'],
    ['https://[::1]/x', 'an IPv6 loopback literal'],
    ['https://[fd00::1]/x', 'a unique-local literal'],
    ['https://localhost/x', 'localhost'],
    ['https://api.localhost./x', 'a .localhost name'],
  ])('#39 item 5 refuses %s (%s) before any fetch, whatever the options', async (url) => {
    const { result, calls } = await decide(url, (calls) => ({
      fetch: plain(calls, 'own'),
      allowUnpinnedHostNames: true,
    }))
    expect(result).toEqual({ refused: 'private' })
    expect(calls).toEqual([])
  })

  it('#39 item 5 a host name without outboundFetch, own fetch or opt-in is refused, resolveHost or not', async () => {
    const { result, calls } = await decide('https://tool.example.test/x', () => ({
      resolveHost: async () => ['93.184.216.34'],
    }))
    expect(result).toEqual({ refused: 'host_name' })
    expect(calls).toEqual([])
  })

  it('#39 item 5 a public literal goes out through outboundFetch when there is one (it checks the address again)', async () => {
    const pinned = await decide('https://93.184.216.34/x', (calls) => ({
      outboundFetch: pinning(calls, ['93.184.216.34']),
    }))
    expect(pinned).toEqual({ result: 'outbound', calls: ['outbound https://93.184.216.34/x'] })
  })

  it('#39 item 5 a host name goes through outboundFetch (resolveHost unused); a refused address is a refusal, a network failure rejects', async () => {
    let resolved = 0
    const resolveHost = async () => {
      resolved++
      return ['93.184.216.34']
    }
    const allowed = await decide('https://tool.example.test/x', (calls) => ({
      outboundFetch: pinning(calls, ['93.184.216.34', '2606:2800:220:1::1']),
      resolveHost,
    }))
    expect(allowed).toEqual({ result: 'outbound', calls: ['outbound https://tool.example.test/x'] })
    expect(resolved).toBe(0)
    const refused = await decide('https://tool.example.test/x', (calls) => ({
      outboundFetch: pinning(calls, ['93.184.216.34', '127.0.0.1']),
    }))
    expect(refused.result).toEqual({ refused: 'private' })
    const failing: OutboundFetch = async () => {
      throw new TypeError('fetch failed')
    }
    await expect(fetchPublic(new URL('https://tool.example.test/x'), {}, { outboundFetch: failing })).rejects.toThrow(
      'fetch failed',
    )
  })

  it("#39 item 5 the host's own fetch and the opt-in go unpinned, after the resolveHost check", async () => {
    const resolveHost = async (name: string) => (name === 'inside.example.test' ? ['10.1.2.3'] : ['93.184.216.34'])
    for (const options of [
      (calls: string[]) => ({ fetch: plain(calls, 'own'), outboundFetch: pinning(calls, []), resolveHost }),
      (_calls: string[]) => ({ allowUnpinnedHostNames: true, resolveHost }),
    ]) {
      expect((await decide('https://inside.example.test/x', options)).result).toEqual({ refused: 'private' })
    }
    const own = await decide('https://tool.example.test/x', (calls) => ({
      fetch: plain(calls, 'own'),
      outboundFetch: pinning(calls, []),
      resolveHost,
    }))
    expect(own).toEqual({ result: 'own', calls: ['own https://tool.example.test/x'] })
    const unresolved = await decide('https://tool.example.test/x', () => ({
      allowUnpinnedHostNames: true,
      resolveHost: async () => [],
    }))
    expect(unresolved.result).toEqual({ refused: 'unresolved' })
  })
})
