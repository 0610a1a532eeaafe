/**
 * Fixtures: an in-process service with fast hashing and an injectable clock, the clients the
 * tests use, and an oauth4webapi options object whose fetch is the handler itself.
 */
import * as oauth from 'oauth4webapi'
import { type TokenServiceOptions, createTokenService } from '../../src/index.ts'
import type { ClientRegistration } from '../../src/clients/index.ts'

export const ISSUER = 'https://auth.example.test'
export const RU = 'https://rp.example.test/cb'
export const PLRU = 'https://rp.example.test/logged-out'

/** A controllable clock (epoch seconds). */
export function clock(start = 1_800_000_000) {
  let now = start
  return {
    now: () => now,
    advance(seconds: number) {
      now += seconds
    },
    set(value: number) {
      now = value
    },
  }
}

export const USERS = [
  {
    sub: 'user-1',
    username: 'alice',
    password: 'alice-password',
    email: 'alice@example.com',
    email_verified: true,
    given_name: 'Alice',
    family_name: 'Example',
  },
  { sub: 'user-2', username: 'bob', password: 'bob-password', email: 'bob@example.com', email_verified: false },
]

export const CLIENTS: Record<string, ClientRegistration> = {
  service: {
    clientId: 'service',
    clientSecret: 'service-secret',
    displayName: 'Service',
    permissions: ['ept:token', 'ept:introspection', 'ept:revocation', 'gt:client_credentials', 'scp:api1'],
  },
  /** A resource server: introspects tokens whose audience is `api1`. */
  api1: {
    clientId: 'api1',
    clientSecret: 'api1-secret',
    permissions: ['ept:introspection'],
  },
  web: {
    clientId: 'web',
    clientSecret: 'web-secret',
    displayName: 'Web App',
    permissions: [
      'ept:authorization',
      'ept:token',
      'ept:logout',
      'ept:revocation',
      'ept:introspection',
      'gt:authorization_code',
      'gt:refresh_token',
      'rst:code',
      'scp:openid',
      'scp:profile',
      'scp:email',
      'scp:api1',
    ],
    redirectUris: [RU, 'https://rp.example.test/cb2'],
    postLogoutRedirectUris: [PLRU],
  },
  web2: {
    clientId: 'web2',
    clientSecret: 'web2-secret',
    displayName: 'Second Web App',
    permissions: [
      'ept:authorization',
      'ept:token',
      'ept:logout',
      'ept:revocation',
      'ept:introspection',
      'gt:authorization_code',
      'gt:refresh_token',
      'rst:code',
      'scp:openid',
      'scp:profile',
    ],
    redirectUris: ['https://rp2.example.test/cb'],
    postLogoutRedirectUris: ['https://rp2.example.test/logged-out'],
  },
  spa: {
    clientId: 'spa',
    displayName: 'Single-page app',
    permissions: [
      'ept:authorization',
      'ept:token',
      'ept:logout',
      'ept:revocation',
      'gt:authorization_code',
      'gt:refresh_token',
      'rst:code',
      'scp:openid',
      'scp:profile',
      'scp:email',
    ],
    redirectUris: ['https://spa.example.test/callback'],
    postLogoutRedirectUris: ['https://spa.example.test/'],
  },
  consent: {
    clientId: 'consent',
    clientSecret: 'consent-secret',
    displayName: 'Explicit Consent App',
    consentType: 'explicit',
    permissions: [
      'ept:authorization',
      'ept:token',
      'gt:authorization_code',
      'gt:refresh_token',
      'rst:code',
      'scp:openid',
      'scp:email',
    ],
    redirectUris: ['https://consent.example.test/cb'],
  },
  noCc: {
    clientId: 'no-cc',
    clientSecret: 'no-cc-secret',
    permissions: ['ept:token', 'scp:api1'],
  },
}

/** A service with every test client registered. */
export async function makeService(options: Partial<TokenServiceOptions> = {}) {
  const time = clock()
  const service = createTokenService({
    issuer: ISSUER,
    now: time.now,
    users: USERS,
    secretHashIterations: 1000,
    logger: { warn() {}, error() {} },
    ...options,
  })
  for (const client of Object.values(CLIENTS)) await service.clients.ensure(client)
  await service.ready()
  return { service, clock: time }
}

/** oauth4webapi options whose fetch goes to the handler in process. */
export function inProcess(handler: (request: Request) => Promise<Response>) {
  return {
    [oauth.customFetch]: (url: string, init?: RequestInit) => handler(new Request(url, init)),
  }
}

/** Discovery through oauth4webapi against a handler. */
export async function discover(handler: (request: Request) => Promise<Response>, issuer = ISSUER) {
  const url = new URL(issuer)
  const response = await oauth.discoveryRequest(url, { ...inProcess(handler) })
  return oauth.processDiscoveryResponse(url, response)
}

/** A form POST request. */
export function form(url: string, params: Record<string, string>, headers: Record<string, string> = {}): Request {
  return new Request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params),
  })
}

/** `Authorization: Basic` for id and secret, form-encoded as RFC 6749 §2.3.1 asks. */
export function basic(id: string, secret: string): string {
  const enc = (value: string) => encodeURIComponent(value).replace(/%20/g, '+')
  return `Basic ${btoa(`${enc(id)}:${enc(secret)}`)}`
}
