/**
 * Auth.js (NextAuth v5) signing the app's visitors in with the Gatehouse this same app serves: a
 * plain OpenID Connect provider entry, nothing Gatehouse-specific. Auth.js discovers the endpoints
 * from `issuer` (over HTTP, like any other provider), runs the code flow with PKCE and state, and
 * takes the user's name and email from the ID token, which by default carries the claims of the
 * granted `profile` and `email` scopes (Gatehouse's `idTokenClaims: 'scopes'`).
 *
 * The config is a function so the issuer and secrets are read when a request comes, not when
 * `next build` loads the module.
 */
import NextAuth from 'next-auth'
import { NEXTAUTH_CLIENT_ID, issuer, nextAuthSecret } from './gatehouse'

export const { handlers, auth, signIn, signOut } = NextAuth(() => ({
  // Auth.js's routes: app/api/auth/[...nextauth]/route.ts
  basePath: '/api/auth',
  // Signs the session cookie. Set AUTH_SECRET (e.g. `openssl rand -base64 33`) for anything real.
  secret: process.env.AUTH_SECRET ?? 'demo-auth-secret-for-local-runs-only-change-me',
  // Auth.js's URL is the request's (see app/api/auth/[...nextauth]/route.ts), or AUTH_URL if set.
  trustHost: true,
  providers: [
    {
      id: 'gatehouse',
      name: 'Gatehouse',
      type: 'oidc',
      issuer: issuer(),
      clientId: NEXTAUTH_CLIENT_ID,
      clientSecret: nextAuthSecret(),
    },
  ],
}))
