/**
 * The one Gatehouse token service of this process, and the route handler that serves it.
 *
 * Next.js bundles each route separately, so a module-level variable would give every route its
 * own service (its own keys, codes and sessions). The instance lives on `globalThis` instead.
 */
import { Permissions, type TokenService, createMemoryStore, createTokenService } from 'gatehouse-oidc'
import { findAccount } from './users'

/** The issuer: this app's public base URL (Gatehouse is mounted at its root). */
export function issuer(): string {
  return process.env.GATEHOUSE_ISSUER ?? 'http://127.0.0.1:3000'
}

/** The client Auth.js (lib/auth.ts) signs the app's own visitors in as. */
export const NEXTAUTH_CLIENT_ID = 'demo-nextauth'

/** Its secret: Auth.js authenticates with it at the token endpoint. */
export function nextAuthSecret(): string {
  return process.env.DEMO_NEXTAUTH_SECRET ?? 'demo-nextauth-secret'
}

/** Where the app's own sign-in page is, for a pending interaction. */
export function signInUrl(uid: string, extra: Record<string, string> = {}): string {
  const url = new URL(`${issuer().replace(/\/$/, '')}/signin`)
  url.search = new URLSearchParams({ uid, ...extra }).toString()
  return url.href
}

async function create(): Promise<TokenService> {
  const service = createTokenService({
    issuer: issuer(),
    store: createMemoryStore(), // in-memory: restarts forget codes, tokens, sessions and keys
    accounts: { findAccount },
    // Every sign-in goes to the app's own page (app/signin), which completes the interaction.
    interaction: (_request, pending) => Response.redirect(signInUrl(pending.uid), 303),
  })
  await service.clients.ensure({
    clientId: 'demo-service',
    clientSecret: process.env.DEMO_SERVICE_SECRET ?? 'demo-service-secret',
    displayName: 'Demo service',
    permissions: [
      Permissions.Endpoints.Token,
      Permissions.Endpoints.Introspection,
      Permissions.Endpoints.Revocation,
      Permissions.GrantTypes.ClientCredentials,
      'scp:api1',
    ],
  })
  await service.clients.ensure({
    clientId: 'demo-web',
    clientSecret: process.env.DEMO_WEB_SECRET ?? 'demo-web-secret',
    displayName: 'Demo web app',
    permissions: [
      Permissions.Endpoints.Authorization,
      Permissions.Endpoints.Token,
      Permissions.Endpoints.Logout,
      Permissions.Endpoints.Revocation,
      Permissions.GrantTypes.AuthorizationCode,
      Permissions.GrantTypes.RefreshToken,
      Permissions.ResponseTypes.Code,
      'scp:openid',
      'scp:profile',
      'scp:email',
      'scp:api1',
    ],
    redirectUris: [process.env.DEMO_WEB_REDIRECT_URI ?? 'http://127.0.0.1:8080/callback'],
  })
  // This app's own Auth.js sign-in (lib/auth.ts): its callback route is on the issuer's host.
  await service.clients.ensure({
    clientId: NEXTAUTH_CLIENT_ID,
    clientSecret: nextAuthSecret(),
    displayName: 'Demo app (Auth.js)',
    permissions: [
      Permissions.Endpoints.Authorization,
      Permissions.Endpoints.Token,
      Permissions.GrantTypes.AuthorizationCode,
      Permissions.ResponseTypes.Code,
      'scp:openid',
      'scp:profile',
      'scp:email',
    ],
    redirectUris: [`${issuer().replace(/\/$/, '')}/api/auth/callback/gatehouse`],
  })
  await service.ready()
  return service
}

const holder = globalThis as typeof globalThis & { __gatehouse?: Promise<TokenService> }

/** The service, created on first use. A failed start-up is not cached: the next request retries. */
export function gatehouse(): Promise<TokenService> {
  holder.__gatehouse ??= create().catch((error: unknown) => {
    holder.__gatehouse = undefined
    throw error
  })
  return holder.__gatehouse
}

/** A route handler for every method: Gatehouse answers (405 with `Allow` for the ones it has not). */
export async function gatehouseRoute(request: Request): Promise<Response> {
  return (await gatehouse()).fetch(request)
}

// The method exports every Gatehouse route file re-exports. Gatehouse answers PUT, PATCH and DELETE
// with its JSON 405 and Allow, like any other endpoint.
export {
  gatehouseRoute as GET,
  gatehouseRoute as HEAD,
  gatehouseRoute as POST,
  gatehouseRoute as OPTIONS,
  gatehouseRoute as PUT,
  gatehouseRoute as PATCH,
  gatehouseRoute as DELETE,
}
