/**
 * The app's own user directory. Gatehouse never sees a password: the sign-in route checks it here
 * and tells Gatehouse who signed in; Gatehouse reads the claims back through `findAccount`.
 * A real app would use its database and a password hash (e.g. Gatehouse's `hashSecret`/`verifySecret`).
 */
import { createHash, timingSafeEqual } from 'node:crypto'

export interface AppUser {
  /** Stable subject identifier, never reassigned. */
  sub: string
  username: string
  password: string
  /** OpenID Connect standard claims released for the `profile` and `email` scopes. */
  claims: Record<string, unknown>
}

const USERS: AppUser[] = [
  {
    sub: 'demo-user-1',
    username: 'alice',
    password: process.env.DEMO_USER_PASSWORD ?? 'alice-password',
    claims: {
      name: 'Alice Example',
      given_name: 'Alice',
      family_name: 'Example',
      email: 'alice@example.com',
      email_verified: true,
    },
  },
]

const digest = (value: string) => createHash('sha256').update(value).digest()

/** The user with these credentials, or undefined. Compares in constant time. */
export function checkCredentials(username: string, password: string): AppUser | undefined {
  const user = USERS.find((candidate) => candidate.username === username)
  // Compare against something even for an unknown name, so timing does not tell which names exist.
  const ok = timingSafeEqual(digest(user?.password ?? '\0unknown'), digest(password))
  return user && ok ? user : undefined
}

/** Claims of a subject (with `sub`), for Gatehouse's ID tokens and userinfo. */
export async function findAccount(sub: string): Promise<Record<string, unknown> | undefined> {
  const user = USERS.find((candidate) => candidate.sub === sub)
  return user ? { sub: user.sub, ...user.claims } : undefined
}
