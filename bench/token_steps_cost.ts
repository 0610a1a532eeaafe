/**
 * #44 item 4: CPU per call of the client_credentials steps changed for Node's ratio to its batched
 * ceiling, each beside what it replaced, in alternating rounds in one process (a shared machine
 * only ever adds time: read the fastest rounds). Tight loops keep caches warmer than a served
 * request does, so in a request each step costs somewhat more; the differences are the point.
 *
 *   node --import tsx bench/token_steps_cost.ts [rounds] [calls per round]
 */
import { base64url } from 'jose'
import { parseScope, createScopeRegistry } from '../src/config/index.ts'
import { base64urlBytes } from '../src/crypto/base64url.ts'
import { tokenResponseText } from '../src/endpoints/token.ts'
import { scopePermission } from '../src/clients/index.ts'
import { scopesForResources } from '../src/protocol/index.ts'
import type { TokenResponse } from '../src/grants/index.ts'

const [roundsArg = '7', callsArg = '300000'] = process.argv.slice(2)
const signature = crypto.getRandomValues(new Uint8Array(64))
const jti = crypto.getRandomValues(new Uint8Array(16))
// A client_credentials token as Gatehouse signs it (~480 characters, built by concatenation).
const segment = base64url.encode(JSON.stringify({ alg: 'ES256', kid: 'k'.repeat(43), typ: 'at+jwt' }))
const payload = base64url.encode(JSON.stringify({ iss: 'http://127.0.0.1:3000', sub: 'bench-service', scope: 'api1' }))
const encodedSignature = base64url.encode(signature)
const token = (i: number): string => `${`${segment}.${payload}${i % 10}`}.${encodedSignature}`
const scopes = createScopeRegistry(['api1'], 'http://127.0.0.1:3000')
const permissions = ['ept:token', 'ept:introspection', 'gt:client_credentials', 'scp:api1']
const cache = new WeakMap<readonly string[], Map<string, { scope: string; audience: readonly string[] }>>()

/** The scope steps of client_credentials before the cache: parse, check, audiences, join. */
function scopePath(parameter: string): { scope: string; audience: string[] } {
  const requested = parseScope(parameter, 50)
  for (const scope of requested) {
    if (scopes.get(scope) === undefined || scopes.isUserScope(scope)) throw new Error('refused')
    if (!permissions.includes(scopePermission(scope))) throw new Error('refused')
  }
  const granted = scopesForResources(requested, [], { scopes } as never)
  return { scope: granted.join(' '), audience: scopes.audiences(granted) }
}

const steps: Array<[string, Array<[string, (i: number) => unknown]>]> = [
  [
    'ES256 signature to base64url',
    [
      ['jose base64url.encode', () => base64url.encode(signature)],
      ['base64urlBytes', () => base64urlBytes(signature)],
    ],
  ],
  [
    '16-byte jti to base64url',
    [
      ['jose base64url.encode', () => base64url.encode(jti)],
      ['base64urlBytes', () => base64urlBytes(jti)],
    ],
  ],
  [
    'token response JSON',
    [
      ['JSON.stringify', (i) => JSON.stringify({ access_token: token(i), token_type: 'Bearer', expires_in: 3600 })],
      [
        'tokenResponseText',
        (i) => tokenResponseText({ access_token: token(i), token_type: 'Bearer', expires_in: 3600 } as TokenResponse),
      ],
    ],
  ],
  [
    'scope parameter to scope and audience',
    [
      ['parse and check', () => scopePath('api1')],
      [
        'granted-scope cache',
        () => {
          let byScope = cache.get(permissions)
          if (!byScope) {
            byScope = new Map([['api1', scopePath('api1')]])
            cache.set(permissions, byScope)
          }
          return byScope.get('api1')
        },
      ],
    ],
  ],
]

const calls = Number(callsArg)
for (const [step, variants] of steps) {
  const times = new Map<string, number[]>(variants.map(([name]) => [name, []]))
  for (const [, run] of variants) for (let i = 0; i < 20_000; i++) run(i) // warm-up
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const [name, run] of round % 2 ? [...variants].reverse() : variants) {
      const before = process.cpuUsage()
      for (let i = 0; i < calls; i++) run(i)
      const used = process.cpuUsage(before)
      times.get(name)?.push(((used.user + used.system) * 1000) / calls)
    }
  }
  const summary = [...times].map(([name, ns]) => {
    const sorted = [...ns].sort((a, b) => a - b)
    return `${name} ${Math.round(sorted[0] ?? 0)}–${Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0)} ns`
  })
  console.log(`${step}: ${summary.join(' · ')} (fastest–median of ${roundsArg} rounds)`)
}
