/**
 * @module events/metrics
 * Operational numbers of the service: requests by endpoint and status, their latency, tokens
 * issued per grant type, failed client authentications, throttled attempts and store errors.
 * The service reports them to a `MetricsHook`; `createMetrics()` is one that keeps them in memory
 * and renders the Prometheus text exposition format 0.0.4 (or forward them to OpenTelemetry's API
 * from a hook of your own).
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 */
import type { ClientAuthenticationFailure } from './types.ts'

export type { ClientAuthenticationFailure }

/** Names of the endpoints in the `endpoint` label (`unknown`: no endpoint at the path). */
export type EndpointName =
  | 'discovery'
  | 'jwks'
  | 'token'
  | 'par'
  | 'device_authorization'
  | 'backchannel_authentication'
  | 'ciba_approval'
  | 'introspection'
  | 'revocation'
  | 'userinfo'
  | 'authorization'
  | 'interaction'
  | 'verification'
  | 'logout'
  | 'registration'
  | 'grant_management'
  | 'grants_page'
  | 'unknown'

/** What was throttled: a client authentication (token, introspection, revocation) or a sign-in. */
export type ThrottledKind = 'client_authentication' | 'sign_in'

/** Grant types that issue tokens. */
export type IssuingGrantType =
  | 'authorization_code'
  | 'client_credentials'
  | 'refresh_token'
  | 'token_exchange'
  | 'device_code'
  | 'ciba'
  | 'jwt_bearer'

/**
 * What the service reports, synchronously and on the request path: keep each call cheap (a
 * counter addition). Values are names and numbers only, never a token, secret or client id.
 *
 * @example
 * // OpenTelemetry: the same numbers through @opentelemetry/api
 * const meter = metrics.getMeter('gatehouse')
 * const requests = meter.createCounter('gatehouse.http.requests')
 * const duration = meter.createHistogram('gatehouse.http.request.duration', { unit: 's' })
 * const hook: MetricsHook = {
 *   request: (endpoint, status, seconds) => {
 *     requests.add(1, { endpoint, status })
 *     duration.record(seconds, { endpoint })
 *   },
 *   tokenIssued: (grantType) => tokens.add(1, { grant_type: grantType }),
 *   clientAuthenticationFailed: (reason) => authFailures.add(1, { reason }),
 *   throttled: (kind) => throttled.add(1, { kind }),
 *   storeError: () => storeErrors.add(1),
 * }
 */
export interface MetricsHook {
  /** A request to an endpoint was answered with `status` after `seconds`. */
  request(endpoint: EndpointName, status: number, seconds: number): void
  /** A token response was issued (one per response, whatever it holds). */
  tokenIssued(grantType: IssuingGrantType): void
  /** A client authentication failed. */
  clientAuthenticationFailed(reason: ClientAuthenticationFailure): void
  /** An attempt was refused by throttling. */
  throttled(kind: ThrottledKind): void
  /** The store failed: a request answered 503, or a readiness check could not reach it. */
  storeError(): void
}

/** The in-memory registry: a `MetricsHook` that renders itself in Prometheus text format. */
export interface Metrics extends MetricsHook {
  /** The Prometheus text exposition (format 0.0.4). */
  render(): string
  /** `render()` as a Response with the Prometheus content type. */
  response(): Response
  /** The content type of `render()`'s text. */
  readonly contentType: string
}

/** Latency bucket upper bounds, seconds: a token response takes ~1 ms, a secret hash ~300 ms. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const
const BUCKET_LABELS = BUCKETS.map(String)

interface EndpointSeries {
  /** Responses by status code. */
  statuses: Map<number, number>
  /** Observations per bucket (not cumulative; the last slot is beyond the largest bound). */
  buckets: Float64Array
  sum: number
  count: number
}

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

/** A label value escaped for the exposition format (backslash, double quote, newline). */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

function counterLines(name: string, help: string, label: string, values: Map<string, number>): string[] {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} counter`]
  for (const [key, value] of values) lines.push(`${name}{${label}="${labelValue(key)}"} ${value}`)
  return lines
}

/**
 * Creates the in-memory metrics registry. Pass it as the service's `metrics` option and serve
 * `metrics.response()` where Prometheus scrapes (`npm start` does at `/metrics` with `METRICS=true`).
 * Per request it costs two Map lookups and a few additions; label strings are built only when
 * rendering.
 *
 * @example
 * const metrics = createMetrics()
 * const service = createTokenService({ issuer, metrics })
 * // in the host's router: if (pathname === '/metrics') return metrics.response()
 */
export function createMetrics(): Metrics {
  const endpoints = new Map<EndpointName, EndpointSeries>()
  const tokens = new Map<string, number>()
  const authFailures = new Map<string, number>()
  const throttled = new Map<string, number>()
  let storeErrors = 0

  function seriesOf(endpoint: EndpointName): EndpointSeries {
    let series = endpoints.get(endpoint)
    if (!series) {
      series = { statuses: new Map(), buckets: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 }
      endpoints.set(endpoint, series)
    }
    return series
  }

  function render(): string {
    const lines: string[] = [
      '# HELP gatehouse_http_requests_total Requests answered, by endpoint and HTTP status code.',
      '# TYPE gatehouse_http_requests_total counter',
    ]
    for (const [endpoint, series] of endpoints) {
      for (const [status, value] of series.statuses) {
        lines.push(`gatehouse_http_requests_total{endpoint="${endpoint}",status="${status}"} ${value}`)
      }
    }
    lines.push(
      '# HELP gatehouse_http_request_duration_seconds Time to answer a request (until the response headers), by endpoint.',
      '# TYPE gatehouse_http_request_duration_seconds histogram',
    )
    for (const [endpoint, series] of endpoints) {
      let cumulative = 0
      for (let i = 0; i < BUCKETS.length; i++) {
        cumulative += series.buckets[i] as number
        lines.push(
          `gatehouse_http_request_duration_seconds_bucket{endpoint="${endpoint}",le="${BUCKET_LABELS[i]}"} ${cumulative}`,
        )
      }
      lines.push(
        `gatehouse_http_request_duration_seconds_bucket{endpoint="${endpoint}",le="+Inf"} ${series.count}`,
        `gatehouse_http_request_duration_seconds_sum{endpoint="${endpoint}"} ${series.sum}`,
        `gatehouse_http_request_duration_seconds_count{endpoint="${endpoint}"} ${series.count}`,
      )
    }
    lines.push(
      ...counterLines('gatehouse_tokens_issued_total', 'Token responses issued, by grant type.', 'grant_type', tokens),
      ...counterLines(
        'gatehouse_client_authentication_failures_total',
        'Failed client authentications, by reason.',
        'reason',
        authFailures,
      ),
      ...counterLines(
        'gatehouse_throttled_requests_total',
        'Attempts refused by throttling, by kind (client_authentication, sign_in).',
        'kind',
        throttled,
      ),
      '# HELP gatehouse_store_errors_total Requests answered 503 and readiness checks failed because the store failed.',
      '# TYPE gatehouse_store_errors_total counter',
      `gatehouse_store_errors_total ${storeErrors}`,
    )
    return `${lines.join('\n')}\n`
  }

  return {
    contentType: CONTENT_TYPE,
    request(endpoint, status, seconds) {
      const series = seriesOf(endpoint)
      series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1)
      let i = 0
      while (i < BUCKETS.length && seconds > (BUCKETS[i] as number)) i++
      series.buckets[i] = (series.buckets[i] as number) + 1
      series.sum += seconds
      series.count++
    },
    tokenIssued(grantType) {
      tokens.set(grantType, (tokens.get(grantType) ?? 0) + 1)
    },
    clientAuthenticationFailed(reason) {
      authFailures.set(reason, (authFailures.get(reason) ?? 0) + 1)
    },
    throttled(kind) {
      throttled.set(kind, (throttled.get(kind) ?? 0) + 1)
    },
    storeError() {
      storeErrors++
    },
    render,
    response() {
      return new Response(render(), { headers: { 'content-type': CONTENT_TYPE, 'cache-control': 'no-store' } })
    },
  }
}
