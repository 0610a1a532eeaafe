/**
 * The metrics registry and the probes, in process: Prometheus text format 0.0.4, the numbers the
 * service reports (requests, latency, tokens per grant, failed client authentications, throttling,
 * store errors), and liveness/readiness answers.
 */
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../../src/index.ts'
import type { Store } from '../../../src/storage/types.ts'
import { createMemoryStore } from '../../../src/storage/memory.ts'
import { StoreUnavailableError } from '../../../src/errors.ts'
import { signIn, setup } from '../../helpers/flow.ts'
import { ISSUER, basic, form, makeService } from '../../helpers/service.ts'

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    map.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return map
}

const token = (id: string, secret: string, scope = 'api1') =>
  form(`${ISSUER}/connect/token`, { grant_type: 'client_credentials', scope }, { authorization: basic(id, secret) })

describe('createMetrics', () => {
  it('renders the text exposition format: HELP, TYPE, buckets to +Inf, sum and count', () => {
    const metrics = createMetrics()
    metrics.request('token', 200, 0.003)
    metrics.request('token', 200, 0.2)
    metrics.request('token', 401, 20)
    metrics.tokenIssued('client_credentials')
    metrics.clientAuthenticationFailed('invalid_secret')
    metrics.throttled('sign_in')
    metrics.storeError()
    const text = metrics.render()
    expect(metrics.contentType).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(text.endsWith('\n')).toBe(true)
    for (const name of [
      'gatehouse_http_requests_total counter',
      'gatehouse_http_request_duration_seconds histogram',
      'gatehouse_tokens_issued_total counter',
      'gatehouse_client_authentication_failures_total counter',
      'gatehouse_throttled_requests_total counter',
      'gatehouse_store_errors_total counter',
    ]) {
      expect(text).toContain(`# TYPE ${name}\n`)
      expect(text).toContain(`# HELP ${name.split(' ')[0]} `)
    }
    const values = samples(text)
    expect(values.get('gatehouse_http_requests_total{endpoint="token",status="200"}')).toBe(2)
    expect(values.get('gatehouse_http_requests_total{endpoint="token",status="401"}')).toBe(1)
    const bucket = (le: string) =>
      values.get(`gatehouse_http_request_duration_seconds_bucket{endpoint="token",le="${le}"}`)
    expect(bucket('0.001')).toBe(0)
    expect(bucket('0.005')).toBe(1)
    expect(bucket('0.25')).toBe(2)
    expect(bucket('10')).toBe(2)
    expect(bucket('+Inf')).toBe(3)
    expect(values.get('gatehouse_http_request_duration_seconds_count{endpoint="token"}')).toBe(3)
    expect(values.get('gatehouse_http_request_duration_seconds_sum{endpoint="token"}')).toBeCloseTo(20.203)
    expect(values.get('gatehouse_tokens_issued_total{grant_type="client_credentials"}')).toBe(1)
    expect(values.get('gatehouse_client_authentication_failures_total{reason="invalid_secret"}')).toBe(1)
    expect(values.get('gatehouse_throttled_requests_total{kind="sign_in"}')).toBe(1)
    expect(values.get('gatehouse_store_errors_total')).toBe(1)
  })

  it('counts what the service does: requests, tokens per grant, failed authentications, throttling', async () => {
    const metrics = createMetrics()
    const { service, as, browser, opts } = await setup({
      metrics,
      throttle: { clientAuthentication: { perIdentity: 10 } },
    })
    expect((await service.fetch(token('service', 'service-secret'))).status).toBe(200)
    expect((await service.fetch(token('service', 'service-secret'))).status).toBe(200)
    const { result } = await signIn({ as, browser, opts })
    const refreshed = await service.fetch(
      form(
        `${ISSUER}/connect/token`,
        { grant_type: 'refresh_token', refresh_token: result.refresh_token as string },
        { authorization: basic('web', 'web-secret') },
      ),
    )
    expect(refreshed.status).toBe(200)
    // Ten wrong secrets from one identity: the eleventh attempt is throttled.
    for (let i = 0; i < 10; i++) expect((await service.fetch(token('service', `wrong-${i}`))).status).toBe(401)
    expect((await service.fetch(token('service', 'service-secret'))).status).toBe(429)
    expect((await service.fetch(new Request(`${ISSUER}/nowhere`))).status).toBe(404)

    const response = metrics.response()
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const values = samples(await response.text())
    expect(values.get('gatehouse_tokens_issued_total{grant_type="client_credentials"}')).toBe(2)
    expect(values.get('gatehouse_tokens_issued_total{grant_type="authorization_code"}')).toBe(1)
    expect(values.get('gatehouse_tokens_issued_total{grant_type="refresh_token"}')).toBe(1)
    expect(values.get('gatehouse_client_authentication_failures_total{reason="invalid_secret"}')).toBe(10)
    expect(values.get('gatehouse_client_authentication_failures_total{reason="throttled"}')).toBe(1)
    expect(values.get('gatehouse_throttled_requests_total{kind="client_authentication"}')).toBe(1)
    expect(values.get('gatehouse_http_requests_total{endpoint="token",status="200"}')).toBe(4)
    expect(values.get('gatehouse_http_requests_total{endpoint="token",status="401"}')).toBe(10)
    expect(values.get('gatehouse_http_requests_total{endpoint="token",status="429"}')).toBe(1)
    expect(values.get('gatehouse_http_requests_total{endpoint="discovery",status="200"}')).toBe(1)
    const pages = [...values.keys()].filter((key) => /endpoint="(authorization|interaction)"/.test(key))
    expect(pages.length, [...values.keys()].join('\n')).toBeGreaterThan(1)
    expect(values.get('gatehouse_http_requests_total{endpoint="unknown",status="404"}')).toBe(1)
    expect(values.get('gatehouse_http_request_duration_seconds_count{endpoint="token"}')).toBe(15)
    expect(values.get('gatehouse_store_errors_total')).toBe(0)
  })

  it('counts a request the store failed (503) as a store error', async () => {
    const metrics = createMetrics()
    const store = createMemoryStore()
    const { service } = await makeService({ metrics, store })
    store.clients.get = () => Promise.reject(new StoreUnavailableError('down'))
    const response = await service.fetch(token('unknown-client', 'x'))
    expect(response.status).toBe(503)
    const values = samples(metrics.render())
    expect(values.get('gatehouse_store_errors_total')).toBe(1)
    expect(values.get('gatehouse_http_requests_total{endpoint="token",status="503"}')).toBe(1)
  })

  it('a host hook gets the same numbers; events still reach onEvent', async () => {
    const calls: string[] = []
    const events: string[] = []
    const { service } = await makeService({
      metrics: {
        request: (endpoint, status) => calls.push(`request ${endpoint} ${status}`),
        tokenIssued: (grantType) => calls.push(`token ${grantType}`),
        clientAuthenticationFailed: (reason) => calls.push(`failed ${reason}`),
        throttled: (kind) => calls.push(`throttled ${kind}`),
        storeError: () => calls.push('store'),
      },
      onEvent: (event) => void events.push(event.type),
    })
    await service.fetch(token('service', 'service-secret'))
    await service.fetch(token('service', 'nope'))
    expect(calls).toEqual([
      'token client_credentials',
      'request token 200',
      'failed invalid_secret',
      'request token 401',
    ])
    expect(events).toEqual(['token.issued', 'client.authentication_failed'])
  })

  it('refuses a metrics option that is not a hook, naming the field', async () => {
    await expect(makeService({ metrics: { request() {} } as never })).rejects.toThrow(/metrics: must be an object/)
  })
})

describe('health probes', () => {
  const probe = (service: { fetch(r: Request): Promise<Response> }, path: string, init?: RequestInit) =>
    service.fetch(new Request(`https://auth.example.test${path}`, init))

  it('are off unless configured: 404 at /healthz and /readyz', async () => {
    const { service } = await makeService()
    expect((await probe(service, '/healthz')).status).toBe(404)
    expect((await probe(service, '/readyz')).status).toBe(404)
  })

  it('answer at the configured host paths, whatever the issuer path; 405 for other methods', async () => {
    const { service } = await makeService({
      issuer: 'https://auth.example.test/tenant',
      health: { livenessPath: '/healthz', readinessPath: '/readyz' },
    })
    const live = await probe(service, '/healthz')
    expect(live.status).toBe(200)
    expect(await live.json()).toEqual({ status: 'ok' })
    const ready = await probe(service, '/readyz')
    expect(ready.status).toBe(200)
    expect(ready.headers.get('cache-control')).toBe('no-store')
    expect(await ready.json()).toEqual({ status: 'ok' })
    expect((await probe(service, '/readyz', { method: 'HEAD' })).status).toBe(200)
    const post = await probe(service, '/readyz', { method: 'POST' })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
    expect((await probe(service, '/tenant/healthz')).status).toBe(404)
  })

  it('readiness is 503 naming the failed check while the store fails or hangs, without error text', async () => {
    const metrics = createMetrics()
    const store = createMemoryStore()
    const { service } = await makeService({
      store,
      metrics,
      health: { readinessPath: '/readyz', readinessTimeout: 0.05 },
    })
    const list = store.keys.list
    const keys = store.keys as Store['keys']
    keys.list = () => Promise.reject(new StoreUnavailableError('cannot connect to secret-host:5432'))
    let response = await probe(service, '/readyz')
    expect(response.status).toBe(503)
    const body = await response.text()
    expect(JSON.parse(body)).toEqual({ status: 'unavailable', checks: { store: 'failed', keys: 'skipped' } })
    expect(body).not.toContain('secret-host')
    keys.list = () => new Promise(() => {})
    response = await probe(service, '/readyz')
    expect(await response.json()).toEqual({ status: 'unavailable', checks: { store: 'timeout', keys: 'skipped' } })
    keys.list = list
    expect((await probe(service, '/readyz')).status).toBe(200)
    expect(samples(metrics.render()).get('gatehouse_store_errors_total')).toBe(2)
  })

  it('refuses a probe path that is not an absolute path', async () => {
    await expect(makeService({ health: { livenessPath: 'healthz' } })).rejects.toThrow(/health\.livenessPath/)
  })
})
