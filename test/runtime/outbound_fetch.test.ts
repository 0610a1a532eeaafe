/**
 * #39 item 5: `nodeOutboundFetch` (adapters/node_outbound.ts) under the real Node, Bun and Deno
 * binaries. test/runtime/outbound_fetch_check.ts runs on each against local https origins that
 * count connections: a name resolved to an allowed address is fetched (SNI and certificate for the
 * name); a refused answer (all of it, any of it, or a literal address) gets no connection; a name
 * that answers differently the second time (DNS rebinding) is resolved once and the connection goes
 * to the checked address; a hanging origin ends at the caller's signal and an endless body at
 * 64 KiB; the service refuses a document on a name that resolves to 127.0.0.1 without connecting.
 */
import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestCert, selfSignedCert } from '../helpers/test_cert.ts'
import { ROOT, bin } from './server.ts'

let cert: TestCert
beforeAll(() => {
  cert = selfSignedCert(['tool.example.test', '*.example.test'])
})
afterAll(() => cert?.remove())

const SCRIPT = 'test/runtime/outbound_fetch_check.ts'
const RUNTIMES = [
  { name: 'node', command: [bin('tsx'), SCRIPT] },
  { name: 'bun', command: [bin('bun'), 'run', SCRIPT] },
  { name: 'deno', command: [bin('deno'), 'run', '--allow-net', '--allow-read', '--allow-env', SCRIPT] },
]

describe('#39 item 5 outbound fetches pinned to the checked address on Node, Bun and Deno', () => {
  it.each(RUNTIMES)(
    '#39 item 5 on $name: resolved once, refused addresses get no connection, rebinding cannot reach 127.0.0.1',
    ({ name, command }) => {
      const [file, ...args] = command as [string, ...string[]]
      const output = execFileSync(file, [...args, cert.dir], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })
      expect(JSON.parse(output.trim().split('\n').at(-1) as string)).toEqual({
        runtime: name,
        allowed: { status: 200, body: 'loopback' },
        allowedConnections: 1,
        names: ['tool.example.test'],
        refused: { error: 'ERR_ADDRESS_REFUSED' },
        mixed: { error: 'ERR_ADDRESS_REFUSED' },
        literal: { error: 'ERR_ADDRESS_REFUSED' },
        refusedConnections: 0,
        rebound: { status: 200, body: 'other' },
        lookups: 1,
        reboundConnections: { loopback: 0, other: 1 },
        hung: { error: 'TimeoutError' },
        hangBounded: true,
        big: 'the client jwks_uri document is larger than 65536 bytes',
        bigBounded: true,
        serviceRefused: 400,
        serviceRefusedConnections: 0,
        serviceAllowed: 303,
        serviceAllowedConnections: 1,
      })
    },
    90_000,
  )
})
