/**
 * @module fuzz/requests
 * Whole fuzzed requests for one endpoint: method, query string, Authorization, Content-Type,
 * Cookie and body, built from the arbitraries with the endpoint's parameter names and good values.
 */
import fc from 'fast-check'
import {
  type Param,
  type RequestSpec,
  authorization,
  contentType,
  cookie,
  delivery,
  formBytes,
  method as anyMethod,
  otherBody,
  params,
  serialize,
  templateParams,
} from './arbitraries.ts'

export interface EndpointFuzz {
  /** Path of the endpoint (below the origin of the issuer). */
  path: string
  /** Parameter names and good values. */
  spec: Readonly<Record<string, readonly string[]>>
  /** Shapes of real requests (names with good values) to mutate. */
  templates?: ReadonlyArray<Readonly<Record<string, readonly string[]>>>
  /** Methods the endpoint serves: sent most often. */
  methods: readonly string[]
  /** Where the parameters go: the query string, the body, or either. */
  carrier?: 'query' | 'body' | 'either'
  /** Valid Authorization headers and real tokens (sent as Bearer). */
  credentials?: readonly string[]
  tokens?: readonly string[]
  kids?: readonly string[]
  /** Real cookies of a signed-in browser. */
  cookies?: readonly string[]
}

/** Parameters for an endpoint: a mutated template (most often) or random names from its spec. */
export function endpointParams(e: EndpointFuzz): fc.Arbitrary<Param[]> {
  const random = params(e.spec)
  const templates = e.templates ?? []
  if (templates.length === 0) return random
  return fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...templates).chain((t) => templateParams(t)) },
    { weight: 1, arbitrary: random },
  )
}

/** A fuzzed request for an endpoint. */
export function endpointRequest(e: EndpointFuzz): fc.Arbitrary<RequestSpec> {
  const credentials = e.credentials ?? []
  const auth = authorization(credentials, e.tokens ?? [], e.kids ?? [])
  return fc
    .record({
      method: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...e.methods) }, { weight: 1, arbitrary: anyMethod }),
      misplace: fc.nat({ max: 7 }).map((n) => n === 0),
      pick: fc.nat(),
      query: fc.option(params(e.spec, 6).map(serialize), { freq: 2 }),
      params: endpointParams(e),
      queryPrefix: fc.constantFrom('?', '?', '?', '?', '?', '?', '?&', '??', '?#'),
      authorization: credentials.length > 0 ? fc.oneof(fc.constantFrom(...credentials), auth) : auth,
      contentType,
      cookie: e.cookies?.length ? fc.oneof(cookie(e.cookies), fc.constantFrom(...e.cookies)) : cookie([]),
      body: fc.oneof(
        { weight: 1, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: otherBody },
        { weight: 2, arbitrary: formBytes(params(e.spec)) },
        { weight: 6, arbitrary: fc.constant('params' as const) },
      ),
      delivery,
      accept: fc.option(fc.constantFrom('text/html', 'application/json', '*/*', 'image/png'), { freq: 3 }),
    })
    .chain((r) =>
      fc.tuple(formBytes(fc.constant(r.params)), fc.boolean()).map(([paramBytes, clean]) => {
        // half the time a well-formed envelope around the fuzzed parameters, to reach deeper checks
        if (clean) {
          const served = e.methods[r.pick % e.methods.length] as string
          r = {
            ...r,
            method: served,
            contentType: 'application/x-www-form-urlencoded',
            body: 'params',
            misplace: false,
            queryPrefix: '?',
          }
        }
        const carrier = e.carrier ?? 'body'
        // `either`: where the method reads them (the body of a POST), now and then the other place
        const inQuery = r.method.toUpperCase() !== 'POST'
        const paramsInQuery = carrier === 'query' || (carrier === 'either' && (r.misplace ? !inQuery : inQuery))
        const query = paramsInQuery ? serialize(r.params) : r.query
        const body = r.body === 'params' ? (paramsInQuery ? undefined : paramBytes) : r.body
        const spec: RequestSpec = {
          method: r.method,
          target: query === null ? e.path : `${e.path}${r.queryPrefix}${query}`,
          headers: {
            authorization: r.authorization,
            'content-type': r.contentType,
            cookie: r.cookie,
            accept: r.accept ?? undefined,
          },
          body,
          delivery: r.delivery,
        }
        return spec
      }),
    )
}
