/**
 * A steady load on two Gatehouse instances sharing one Redis deployment, while a test kills a
 * primary (#43 item 4): client credentials, code redemption (authorize with a signed-in session,
 * then the token request) and refresh chains, every request timed and its answer kept. After the
 * failover, `audit()` checks what a failover must not do: a code or refresh token answered 200
 * redeemable again (a second redemption), a code or refresh token answered 200 unknown (a lost
 * write). The instances are two services in this process, each with its own store and connections.
 */
import { RU, USERS, basic, form } from './service.ts'
import { Browser } from './browser.ts'
import { authorizationUrl } from './flow.ts'
import type * as oauth from 'oauth4webapi'
import { createTokenService } from '../../src/index.ts'
import type { Store } from '../../src/storage/types.ts'

export const LOAD_ISSUER = 'https://auth.example.test'
type Handler = (request: Request) => Promise<Response>
type Kind = 'client_credentials' | 'authorize' | 'code' | 'refresh'

/** One request's outcome. */
export interface Sample {
  kind: Kind
  instance: number
  start: number
  ms: number
  status: number
  error?: string
  description?: string
  retryAfter?: string | null
}

const CLIENTS = [
  {
    clientId: 'load-service',
    clientSecret: 'load-service-secret',
    permissions: ['ept:token', 'gt:client_credentials', 'scp:api1'],
  },
  {
    clientId: 'load-web',
    clientSecret: 'load-web-secret',
    permissions: [
      'ept:authorization',
      'ept:token',
      'gt:authorization_code',
      'gt:refresh_token',
      'rst:code',
      'scp:openid',
      'scp:api1',
    ],
    redirectUris: [RU],
  },
]

/** Two services (the instances) on stores made by `makeStore`, clients registered, users signed in. */
export async function startInstances(makeStore: () => Promise<Store>): Promise<Handler[]> {
  const handlers: Handler[] = []
  for (let i = 0; i < 2; i++) {
    const service = createTokenService({
      issuer: LOAD_ISSUER,
      store: await makeStore(),
      users: USERS,
      secretHashIterations: 1000,
      logger: { warn() {}, error() {} },
    })
    for (const client of CLIENTS) await untilStored(() => service.clients.ensure(client))
    await untilStored(() => service.ready())
    handlers.push(service.fetch)
  }
  return handlers
}

/**
 * The set-up's writes, again while the store answers unavailable (at most 15 s): on a loaded
 * machine a fresh replica once acknowledged a WAIT later than the tests' 500 ms. Before the load
 * starts, so the figures are not touched.
 */
async function untilStored<T>(write: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      return await write()
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

interface Redeemed {
  code: string
  verifier: string
}

/** The load and what it learned; `stop()` ends it; `audit()` checks codes and tokens afterwards. */
export class FailoverLoad {
  readonly samples: Sample[] = []
  /** Codes answered 200 at the token endpoint. */
  readonly redeemed: Redeemed[] = []
  /** Refresh tokens a 200 rotated away (consumed). */
  readonly rotatedAway: string[] = []
  /** Chains: each holds the refresh token of its last 200 (`undefined` when it was never answered). */
  readonly chains: Array<{ token: string; answered: boolean; ended?: string }> = []
  private running = true
  private loops: Promise<void>[] = []
  private readonly handlers: Handler[]
  private readonly browsers: Browser[] = []

  constructor(handlers: Handler[]) {
    this.handlers = handlers
  }

  /**
   * Signs in `sessions` browsers for the code loops and opens `chains` refresh chains, each from a
   * session of its own (a session keeps a bounded number of grants: the code loops' sessions drop
   * their oldest grants, which would end a chain begun there).
   */
  async prepare(sessions = 6, chains = 4): Promise<void> {
    for (let i = 0; i < sessions + chains; i++) this.browsers.push(await this.signIn(i % 2))
    for (let i = 0; i < chains; i++) {
      let tokens = await this.codeFlow(sessions + i, i % 2)
      for (let attempt = 0; !tokens && attempt < 5; attempt++) tokens = await this.codeFlow(sessions + i, i % 2)
      if (!tokens?.refresh_token) throw new Error('no refresh token to start a chain')
      this.chains.push({ token: tokens.refresh_token, answered: true })
    }
    this.browsers.splice(sessions)
  }

  /** A browser signed in on instance `instance` (asked again after a 503: the store is up but slow). */
  private async signIn(instance: number): Promise<Browser> {
    for (let attempt = 0; ; attempt++) {
      const browser = new Browser(this.handlers[instance] as Handler)
      const { url } = await authorizationUrl(this.as(), { clientId: 'load-web', scope: 'openid api1' })
      const { page } = await browser.navigate(url.href)
      const signedIn = page?.status === 200 ? await browser.signIn(page, 'alice', 'alice-password') : undefined
      if (signedIn?.callback) return browser
      if (attempt === 5) throw new Error(`sign-in failed: ${signedIn?.page?.status ?? page?.status}`)
    }
  }

  /** Starts the loops: two of client credentials, one code flow per browser, one per chain. */
  start(): void {
    let n = 0
    const loop = (step: () => Promise<unknown>) =>
      (async () => {
        while (this.running) {
          await step().catch(() => {})
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      })()
    for (let i = 0; i < 2; i++) this.loops.push(loop(() => this.clientCredentials(n++ % 2)))
    for (const [i] of this.browsers.entries()) this.loops.push(loop(() => this.codeFlow(i, n++ % 2)))
    for (const [i] of this.chains.entries()) this.loops.push(loop(() => this.refresh(i, n++ % 2)))
  }

  async stop(): Promise<void> {
    this.running = false
    await Promise.all(this.loops)
  }

  private as(): oauth.AuthorizationServer {
    return {
      issuer: LOAD_ISSUER,
      authorization_endpoint: `${LOAD_ISSUER}/connect/authorize`,
      token_endpoint: `${LOAD_ISSUER}/connect/token`,
    }
  }

  /** Sends `request` to instance `instance`, recording its outcome. */
  private async send(kind: Kind, instance: number, request: () => Promise<Response>): Promise<Response> {
    const start = performance.now()
    const response = await request()
    const sample: Sample = { kind, instance, start, ms: performance.now() - start, status: response.status }
    if (response.status >= 400 && response.headers.get('content-type')?.includes('json')) {
      const body = (await response.clone().json()) as { error?: string; error_description?: string }
      sample.error = body.error
      sample.description = body.error_description
    }
    if (response.status === 503) sample.retryAfter = response.headers.get('retry-after')
    this.samples.push(sample)
    return response
  }

  private token(instance: number, params: Record<string, string>, id: string, secret: string): Promise<Response> {
    const handler = this.handlers[instance] as Handler
    return handler(form(`${LOAD_ISSUER}/connect/token`, params, { authorization: basic(id, secret) }))
  }

  /** A token request's definite answer for the audit: a 503 is asked again (for up to 20 s). */
  private async definite(instance: number, params: Record<string, string>): Promise<number> {
    for (let attempt = 0; attempt < 80; attempt++) {
      const response = await this.token(instance, params, 'load-web', 'load-web-secret')
      if (response.status !== 503) return response.status
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    throw new Error('the store did not answer the audit')
  }

  private async clientCredentials(instance: number): Promise<void> {
    const params = { grant_type: 'client_credentials', scope: 'api1' }
    await this.send('client_credentials', instance, () =>
      this.token(instance, params, 'load-service', 'load-service-secret'),
    )
  }

  /** Authorize with browser `b`'s session on one instance, redeem on the other. */
  private async codeFlow(b: number, instance: number): Promise<Record<string, string> | undefined> {
    const browser = this.browsers[b] as Browser
    const { url, verifier } = await authorizationUrl(this.as(), { clientId: 'load-web', scope: 'openid api1' })
    const handler = this.handlers[instance] as Handler
    const authorized = await this.send('authorize', instance, () => {
      const headers = new Headers({ cookie: browser.cookieHeader() })
      return handler(new Request(url, { headers, redirect: 'manual' }))
    })
    const location = authorized.headers.get('location')
    const code = location ? new URL(location).searchParams.get('code') : null
    if ((authorized.status !== 302 && authorized.status !== 303) || !code) {
      if (authorized.status !== 503) throw new Error(`authorize answered ${authorized.status} ${location ?? ''}`)
      return undefined
    }
    const other = 1 - instance
    const params = { grant_type: 'authorization_code', code, redirect_uri: RU, code_verifier: verifier }
    const response = await this.send('code', other, () => this.token(other, params, 'load-web', 'load-web-secret'))
    if (response.status !== 200) return undefined
    this.redeemed.push({ code, verifier })
    return (await response.json()) as Record<string, string>
  }

  /** One rotation of chain `c`: a 200 moves it on; a 503 leaves it to be retried with the same token. */
  private async refresh(c: number, instance: number): Promise<void> {
    const chain = this.chains[c] as FailoverLoad['chains'][number]
    if (chain.ended) return
    const params = { grant_type: 'refresh_token', refresh_token: chain.token }
    const response = await this.send('refresh', instance, () =>
      this.token(instance, params, 'load-web', 'load-web-secret'),
    )
    if (response.status === 200) {
      const body = (await response.json()) as { refresh_token: string }
      this.rotatedAway.push(chain.token)
      chain.token = body.refresh_token
      chain.answered = true
    } else if (response.status === 503) {
      // The rotation may have happened on the server: the same token is tried again.
      chain.answered = false
    } else {
      const error = this.samples.at(-1)?.error ?? String(response.status)
      // Refused after a 503 (the rotation had happened): the client starts over, as a real one would.
      // Refused right after a 200 answered it: the token was lost.
      chain.ended = chain.answered ? `lost: ${error}` : `after a 503: ${error}`
    }
  }

  /**
   * After the failover: each chain's last token answered 200 must still work (else a lost write);
   * every code and refresh token a 200 consumed must be refused (else a second redemption).
   */
  async audit(): Promise<{ lostTokens: number; lostCodes: number; secondRedemptions: number; endedAfter503: number }> {
    let lostTokens = 0
    let secondRedemptions = 0
    for (const chain of this.chains) {
      if (chain.ended) {
        if (chain.ended.startsWith('lost')) lostTokens++
        continue
      }
      const params = { grant_type: 'refresh_token', refresh_token: chain.token }
      if ((await this.definite(0, params)) !== 200) {
        if (chain.answered) lostTokens++
        else chain.ended = 'after a 503'
      }
    }
    for (const { code, verifier } of this.redeemed) {
      const params = { grant_type: 'authorization_code', code, redirect_uri: RU, code_verifier: verifier }
      if ((await this.definite(1, params)) === 200) secondRedemptions++
    }
    for (const token of this.rotatedAway) {
      const params = { grant_type: 'refresh_token', refresh_token: token }
      if ((await this.definite(0, params)) === 200) secondRedemptions++
    }
    // A code answered by authorize but refused at the token endpoint (not after a 503) was lost.
    const lostCodes = this.samples.filter((s) => s.kind === 'code' && s.status === 400).length
    const endedAfter503 = this.chains.filter((chain) => chain.ended?.startsWith('after')).length
    return { lostTokens, lostCodes, secondRedemptions, endedAfter503 }
  }
}

/** Counts of `samples` by kind and status, e.g. `code 200×812 503×40`. */
export function summarize(samples: Sample[]): string {
  const byKind = new Map<string, Map<number, number>>()
  for (const sample of samples) {
    const statuses = byKind.get(sample.kind) ?? new Map<number, number>()
    statuses.set(sample.status, (statuses.get(sample.status) ?? 0) + 1)
    byKind.set(sample.kind, statuses)
  }
  return [...byKind]
    .map(([kind, statuses]) => `${kind} ${[...statuses].map(([status, count]) => `${status}×${count}`).join(' ')}`)
    .join(', ')
}
