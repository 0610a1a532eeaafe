/**
 * Fuzz: token, introspection, revocation, userinfo, PAR and device authorization endpoints under
 * random methods, query strings, Authorization/Content-Type/Cookie headers and bodies (forms with broken encodings,
 * invalid UTF-8, repeated and over-long parameters; JSON, multipart, bytes). Every answer must be
 * < 500, never a redirect, and every 4xx RFC 6749 §5.2 JSON with a known string `error`.
 */
import fc from 'fast-check'
import { describe, it } from 'vitest'
import { RU } from '../helpers/service.ts'
import { MARKER, settings } from './arbitraries.ts'
import { STORE_CHOICES } from '../helpers/stores.ts'
import { checkApi, fuzzSetup, send } from './fixtures.ts'
import { type EndpointFuzz, endpointRequest } from './requests.ts'

type Fixture = Awaited<ReturnType<typeof fuzzSetup>>
const NAMES = ['token', 'introspection', 'revocation', 'userinfo', 'par', 'device_authorization'] as const
type Name = (typeof NAMES)[number]

const CLIENT_IDS = [
  'web',
  'service',
  'spa',
  'no-cc',
  'api1',
  'consent',
  'cli',
  'tv',
  'unknown',
  'constructor',
  '__proto__',
]
const SECRETS = ['web-secret', 'service-secret', 'api1-secret', 'tv-secret', 'wrong', MARKER]

/** Each endpoint: what to fuzz, the number of runs and the seed. */
function endpoints(fx: Fixture): Record<Name, [EndpointFuzz, number, number]> {
  const tokens = [fx.accessToken, fx.refreshToken, fx.idToken, fx.ccToken]
  const common = { credentials: fx.credentials, tokens, kids: fx.kids, cookies: fx.cookies }
  return {
    token: [
      {
        ...common,
        path: '/connect/token',
        methods: ['POST'],
        spec: {
          grant_type: [
            'authorization_code',
            'refresh_token',
            'client_credentials',
            'password',
            'implicit',
            'urn:ietf:params:oauth:grant-type:device_code',
          ],
          client_id: CLIENT_IDS,
          client_secret: SECRETS,
          code: ['a'.repeat(43), fx.refreshToken],
          redirect_uri: [RU, `${RU}/`, 'https://evil.example/cb'],
          code_verifier: ['a'.repeat(43), 'a'.repeat(128), 'a'.repeat(129), 'short'],
          refresh_token: [fx.refreshToken, fx.accessToken, 'x'.repeat(43)],
          device_code: [fx.deviceCode, 'x'.repeat(43), fx.refreshToken],
          scope: ['api1', 'openid', 'api1 api1', 'offline_access', 'openid api1', 'profile', ' api1 ', 'api1\tapi1'],
        },
        templates: [
          { grant_type: ['client_credentials'], scope: ['api1', 'api1 api1', 'openid', ''] },
          {
            grant_type: ['client_credentials'],
            scope: ['api1'],
            client_id: ['service', 'no-cc', 'spa'],
            client_secret: ['service-secret', 'no-cc-secret'],
          },
          {
            grant_type: ['authorization_code'],
            code: ['a'.repeat(43)],
            redirect_uri: [RU],
            code_verifier: ['a'.repeat(43)],
          },
          { grant_type: ['authorization_code'], code: ['a'.repeat(43)], redirect_uri: [RU], client_id: ['spa', 'web'] },
          { grant_type: ['refresh_token'], refresh_token: [fx.refreshToken], scope: ['openid', 'openid profile'] },
          { grant_type: ['refresh_token'], refresh_token: [fx.refreshToken], client_id: ['spa', 'web'] },
          {
            grant_type: ['urn:ietf:params:oauth:grant-type:device_code'],
            device_code: [fx.deviceCode, 'x'.repeat(43)],
            client_id: ['cli', 'tv', 'web'],
          },
        ],
      },
      500,
      0x6a7e_0100,
    ],
    introspection: [
      {
        ...common,
        path: '/connect/introspect',
        methods: ['POST'],
        spec: {
          token: tokens,
          token_type_hint: ['access_token', 'refresh_token', 'id_token', 'unknown'],
          client_id: CLIENT_IDS,
          client_secret: SECRETS,
        },
        templates: [
          { token: tokens, token_type_hint: ['access_token', 'refresh_token'] },
          {
            token: tokens,
            client_id: ['api1', 'web', 'service'],
            client_secret: ['api1-secret', 'web-secret', 'service-secret'],
          },
        ],
      },
      500,
      0x6a7e_0101,
    ],
    revocation: [
      {
        ...common,
        path: '/connect/revoke',
        methods: ['POST'],
        spec: {
          token: tokens,
          token_type_hint: ['access_token', 'refresh_token', 'unknown'],
          client_id: CLIENT_IDS,
          client_secret: SECRETS,
        },
        templates: [
          { token: tokens, token_type_hint: ['access_token', 'refresh_token'] },
          { token: tokens, client_id: ['spa', 'web', 'service'] },
        ],
      },
      500,
      0x6a7e_0102,
    ],
    userinfo: [
      {
        ...common,
        path: '/connect/userinfo',
        methods: ['GET', 'POST'],
        credentials: [fx.accessToken, fx.ccToken].map((t) => `Bearer ${t}`),
        spec: { access_token: tokens, scope: ['openid'], claims: ['{"userinfo":{"email":null}}'] },
        templates: [{ access_token: tokens }],
        carrier: 'either',
      },
      500,
      0x6a7e_0103,
    ],
    // RFC 9126: authenticated like the token endpoint, validated like the authorization endpoint;
    // 201 with a request_uri, or RFC 6749 §5.2 JSON (never a redirect: nothing is verified yet).
    par: [
      {
        ...common,
        path: '/connect/par',
        methods: ['POST'],
        spec: {
          response_type: ['code', 'token', 'code id_token', ''],
          client_id: CLIENT_IDS,
          client_secret: SECRETS,
          redirect_uri: [RU, `${RU}/`, 'https://evil.example/cb', 'javascript:alert(1)'],
          scope: ['openid', 'openid api1', 'api1', 'offline_access openid', 'unknown'],
          state: ['s', MARKER],
          nonce: ['n', MARKER],
          code_challenge: ['a'.repeat(43), 'short', 'a'.repeat(129)],
          code_challenge_method: ['S256', 'plain', 'S512'],
          request_uri: ['urn:ietf:params:oauth:request_uri:abc', 'https://evil.example/r'],
          request: ['eyJhbGciOiJub25lIn0.e30.'],
          dpop_jkt: ['a'.repeat(43), 'short'],
          resource: ['https://api.example/', 'urn:bench:api1', 'not a uri'],
          prompt: ['none', 'login', 'consent', 'create', 'none login'],
          max_age: ['0', '-1', '1e9', 'x'],
        },
        templates: [
          {
            response_type: ['code'],
            client_id: ['web'],
            client_secret: ['web-secret'],
            redirect_uri: [RU],
            scope: ['openid', 'openid api1'],
            code_challenge: ['a'.repeat(43)],
            code_challenge_method: ['S256'],
          },
          { response_type: ['code'], client_id: ['spa', 'web', 'service'], redirect_uri: [RU], scope: ['openid'] },
        ],
      },
      400,
      0x6a7e_0104,
    ],
    // RFC 8628 §3.1: authenticated like the token endpoint, scope and resource as at authorize.
    device_authorization: [
      {
        ...common,
        path: '/connect/device',
        methods: ['POST'],
        spec: {
          client_id: CLIENT_IDS,
          client_secret: SECRETS,
          scope: ['openid', 'openid api1', 'api1', 'offline_access openid', 'unknown', 'email'],
          resource: ['https://api.example/', 'urn:bench:api1', 'not a uri'],
        },
        templates: [
          { client_id: ['cli'], scope: ['openid', 'openid api1', 'profile api1'] },
          { client_id: ['tv'], client_secret: ['tv-secret', 'wrong'], scope: ['openid'] },
        ],
      },
      300,
      0x6a7e_0105,
    ],
  }
}

// #17.5: on every store the environment offers, not only memory (a NUL reached PostgreSQL as a 500).
describe.each(STORE_CHOICES)(
  'fuzz ($name store): API endpoints answer < 500 with RFC 6749 §5.2 JSON errors',
  (kind) => {
    it.skipIf(kind.skip).each(NAMES)('%s', async (name) => {
      // a fresh service each: revocation and refresh replays must not spoil the others' real tokens
      const fx = await fuzzSetup(kind)
      const [endpoint, runs, seed] = endpoints(fx)[name]
      await fc.assert(
        fc.asyncProperty(endpointRequest(endpoint), async (spec) => {
          const { request, response, body } = await send(fx.service, spec)
          checkApi(response, body, request.method)
        }),
        settings(seed, runs),
      )
    })
  },
)
