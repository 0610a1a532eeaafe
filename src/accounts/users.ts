/**
 * @module accounts/users
 * The built-in user directory behind the embedded sign-in page: configured users with passwords
 * hashed at load (or given pre-hashed), looked up by username, verified in constant time.
 *
 * The users come from the configuration and live in memory: there is nothing stored to rehash. A
 * pre-hashed password with more PBKDF2 iterations than the platform computes
 * (`secretHashMaxIterations`) is logged at load and never signs in (its hash must be replaced in
 * the configuration, e.g. by the plain password, hashed at load with the configured count).
 */
import type { UserConfig } from './schema.ts'
import type { Logger } from '../events/index.ts'
import { checkSecret, hashIterations, hashSecret, isSecretHash, verifySecret } from '../security/index.ts'

interface StoredUser {
  sub: string
  username: string
  passwordHash: string
  claims: Record<string, unknown>
}

/** Creates the directory; `ready` settles once every password is hashed. */
export function createUserDirectory(
  users: readonly UserConfig[],
  hashing: { iterations: number; maxIterations?: number },
  logger?: Logger,
) {
  const { iterations, maxIterations } = hashing
  const bySub = new Map<string, StoredUser>()
  const byUsername = new Map<string, StoredUser>()
  for (const user of users) {
    if (bySub.has(user.sub)) throw new TypeError(`invalid users\nsub ${JSON.stringify(user.sub)} appears twice`)
    if (byUsername.has(user.username.toLowerCase())) {
      throw new TypeError(`invalid users\nusername ${JSON.stringify(user.username)} appears twice`)
    }
    const { password, username, ...claims } = user
    const stored: StoredUser = {
      sub: user.sub,
      username,
      passwordHash: password,
      claims: { preferred_username: username, ...claims },
    }
    bySub.set(user.sub, stored)
    byUsername.set(username.toLowerCase(), stored)
  }
  // A hash to verify against for unknown usernames, so both paths cost the same.
  const dummy = hashSecret('dummy password for timing', iterations)
  const ready = Promise.all(
    [...bySub.values()].map(async (user) => {
      if (!isSecretHash(user.passwordHash)) user.passwordHash = await hashSecret(user.passwordHash, iterations)
      const count = hashIterations(user.passwordHash) ?? 0
      if (maxIterations !== undefined && count > maxIterations) {
        logger?.warn('a user password hash has more PBKDF2 iterations than this platform computes: it cannot sign in', {
          sub: user.sub,
          iterations: count,
          maxIterations,
        })
      }
    }),
  ).then(() => undefined)

  return {
    ready,
    /** The user's claims when username and password match, else undefined. */
    /** Whether a built-in user has this username (case-insensitive). */
    exists(username: string): boolean {
      return byUsername.has(username.toLowerCase())
    },
    /**
     * The `sub` of the one built-in user whose `email` is this one (case-insensitive), or undefined
     * when none or several have it (#45: an identity provider's user mapped by email).
     */
    subOfEmail(email: string): string | undefined {
      const wanted = email.toLowerCase()
      const found = [...bySub.values()].filter(
        (user) => typeof user.claims.email === 'string' && user.claims.email.toLowerCase() === wanted,
      )
      return found.length === 1 ? found[0]?.sub : undefined
    },
    /** The `sub` of the built-in user with this username (case-insensitive), or undefined. */
    subOf(username: string): string | undefined {
      return byUsername.get(username.toLowerCase())?.sub
    },
    async authenticate(username: string, password: string): Promise<Record<string, unknown> | undefined> {
      await ready
      const user = byUsername.get(username.toLowerCase())
      const limit = maxIterations !== undefined ? { maxIterations } : {}
      const result = await checkSecret(password, user?.passwordHash ?? (await dummy), limit)
      // Unverifiable here (logged at load): the same hash work as a wrong password, then a refusal.
      if (result === 'unverifiable') await verifySecret(password, await dummy)
      return result === 'match' && user ? { ...user.claims } : undefined
    },
    /** Claims by subject (the AccountProvider of the embedded default). */
    async findAccount(sub: string): Promise<Record<string, unknown> | undefined> {
      const user = bySub.get(sub)
      return user && { ...user.claims }
    },
  }
}

export type UserDirectory = ReturnType<typeof createUserDirectory>
