/**
 * @module interaction/password
 * The built-in sign-in's password check, shared by the authorization interaction and the device
 * verification pages: throttled per username and address (src/security/throttle.ts) before the password is
 * verified, with the `signin.failed` / `signin.succeeded` events.
 */
import type { Context } from '../context.ts'
import { metaOf, throttledAfter } from '../security/index.ts'
import type { Authentication } from './request.ts'

/** The outcome of a sign-in attempt: the authentication, or the message for the form. */
export type PasswordOutcome =
  | { login: Authentication }
  | { message: string; init?: { status: number; headers: Headers } }

/**
 * Checks a username and password for `clientId`'s sign-in. Usernames match case-insensitively,
 * so they are counted that way. Events name the username only when it exists: people type
 * passwords into the username field.
 */
export async function checkPassword(
  request: Request,
  ctx: Context,
  clientId: string,
  username: string,
  password: string,
): Promise<PasswordOutcome> {
  const meta = metaOf(request)
  const throttle = ctx.throttle
  const rules = throttle ? await throttle.userRules(username.toLowerCase(), meta.address) : undefined
  const named = ctx.users.exists(username) ? { username } : {}
  const throttled = async (): Promise<PasswordOutcome | undefined> => {
    const wait = throttle && rules ? await throttle.limiter.retryAfter(rules.all, ctx.now(), { fresh: true }) : 0
    if (wait <= 0) return undefined
    ctx.emit(meta, { type: 'signin.failed', clientId, ...named, reason: 'throttled' })
    const minutes = Math.ceil(wait / 60)
    const { status, headers } = throttledAfter(wait)
    return {
      message: `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      init: { status, headers: new Headers(headers) },
    }
  }
  // Checked before the password is: a throttled attempt learns nothing, even from a right guess.
  // The slow hash runs one at a time per username and address, re-checking first.
  const attempt = async (): Promise<PasswordOutcome> => {
    const refused = await throttled()
    if (refused) return refused
    const found = await ctx.users.authenticate(username, password)
    if (found) return { login: { sub: String(found.sub), authTime: ctx.now(), amr: ['pwd'] } }
    ctx.emit(meta, { type: 'signin.failed', clientId, ...named, reason: 'invalid_credentials' })
    if (throttle && rules) await throttle.limiter.fail(rules.all, ctx.now())
    return { message: 'The username or password is incorrect.' }
  }
  const outcome = throttle && rules ? await throttle.exclusive(rules.exclusive, attempt) : await attempt()
  if ('login' in outcome) ctx.emit(meta, { type: 'signin.succeeded', clientId, sub: outcome.login.sub })
  return outcome
}
