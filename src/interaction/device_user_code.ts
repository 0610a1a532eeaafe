/**
 * @module interaction/device_user_code
 * The user-code form of the verification page (RFC 8628 §3.3) and what a submitted code leads
 * to. The form is CSRF-protected without stored state: its token is a hash of the browser-binding
 * cookie (HttpOnly, so a cross-site page cannot compute it). Wrong codes are throttled (RFC 8628
 * §5.1) with the sign-in limiter under attempts keys of their own, `throttle.userCode` wrong codes
 * per `throttle.window`: per address (`user_code-address:…`, IPv4 or IPv6 /64), per network
 * (`user_code-network:…`, IPv4 /24 or IPv6 /48) and from everywhere (`user_code-all`), checked
 * before the store is asked, so a throttled guess learns nothing, even a right one.
 */
import type { Context } from '../context.ts'
import { browserCookieName, readCookie, setCookie } from './cookies.ts'
import { addressBucket, metaOf, networkBucket, throttledAfter, type ThrottleRule } from '../security/index.ts'
import { textsOf } from '../pages/index.ts'
import { randomToken, timingSafeEqual } from '../crypto/index.ts'
import { normalizeUserCode } from '../tokens/index.ts'
import type { DeviceCodeRecord } from '../storage/index.ts'
import { startDeviceInteraction } from './device.ts'
import { userCodePage } from './device_pages.ts'

/** The form's anti-CSRF token for a browser-binding cookie value. */
function csrfOf(cookieValue: string, ctx: Context): string | Promise<string> {
  return ctx.sha256(`gatehouse verify csrf ${cookieValue}`)
}

/**
 * The user-code form for this browser (setting the binding cookie when it has none), prefilled
 * with `userCode`, showing `message`.
 */
export async function userCodeForm(
  request: Request,
  ctx: Context,
  input: { userCode?: string; message?: string } = {},
  init: { status?: number; headers?: Headers } = {},
): Promise<Response> {
  const headers = new Headers(init.headers)
  let value = readCookie(request, browserCookieName(ctx))
  if (value === undefined) {
    value = randomToken()
    headers.append('set-cookie', setCookie(ctx, browserCookieName(ctx), value, ctx.config.sessionTtl))
  }
  const page = { action: ctx.urls.verification, csrf: await csrfOf(value, ctx), ...input }
  return userCodePage(ctx.config.theme, page, { ...init, headers })
}

/** Whether the form's token matches this browser's binding cookie. */
export async function isUserCodeFormGenuine(
  request: Request,
  csrf: string | undefined,
  ctx: Context,
): Promise<boolean> {
  const value = readCookie(request, browserCookieName(ctx))
  return value !== undefined && csrf !== undefined && timingSafeEqual(csrf, await csrfOf(value, ctx))
}

/**
 * The throttle rules of wrong user codes from `address` (#39 item 7), the overall one last. A
 * request without an address counts in the overall rule only: a bucket of its own would be one
 * that every address-less end-user shares, so one guesser would lock them all out (and without
 * any address, as behind a proxy that passes none, it would be the overall rule once more).
 */
function userCodeRules(ctx: Context, address: string | undefined): { rules: ThrottleRule[]; queue: string } {
  const settings = ctx.config.throttle
  if (settings === false || !ctx.throttle) return { rules: [], queue: '' }
  const { window, userCode: limits } = settings
  const rules: ThrottleRule[] = []
  let queue = 'user_code-all'
  if (address !== undefined) {
    rules.push({ key: `user_code-address:${addressBucket(address)}`, limit: limits.perAddress, window })
    queue = rules[0]?.key ?? queue
    const network = networkBucket(address)
    if (network !== undefined) {
      queue = `user_code-network:${network}`
      rules.push({ key: queue, limit: limits.perNetwork, window })
    }
  }
  rules.push({ key: 'user_code-all', limit: limits.overall, window })
  return { rules, queue }
}

/**
 * A submitted user code: malformed → the form again; throttled → the form with 429; unknown or
 * expired → counted, the form again (the same words for both); already decided → the form saying
 * so; pending → the device interaction starts.
 */
export async function submitUserCode(request: Request, typed: string, ctx: Context): Promise<Response> {
  const { rules, queue } = userCodeRules(ctx, metaOf(request).address)
  const throttle = ctx.throttle
  const attempt = (): Promise<Response | DeviceCodeRecord> => checkUserCode(request, typed, rules, ctx)
  // One at a time per network (in the overall queue without an address): a burst, even spread
  // over the /64s of one /48, cannot pass the check before its failures are counted. Across
  // networks the overall count may run over by the guesses in flight at once.
  const found = throttle && rules.length ? await throttle.exclusive(queue, attempt) : await attempt()
  // Outside the queue: the host's hook may take its time.
  return found instanceof Response ? found : startDeviceInteraction(request, found, ctx)
}

/** The throttle check, the lookup and the count of a wrong code: the page to show, or the pending device. */
async function checkUserCode(
  request: Request,
  typed: string,
  rules: ThrottleRule[],
  ctx: Context,
): Promise<Response | DeviceCodeRecord> {
  const t = textsOf(ctx.config.theme)
  const meta = metaOf(request)
  const throttle = ctx.throttle
  const wait = throttle && rules.length ? await throttle.limiter.retryAfter(rules, ctx.now(), { fresh: true }) : 0
  if (wait > 0) {
    ctx.emit(meta, { type: 'device.user_code_failed', reason: 'throttled' })
    const { status, headers } = throttledAfter(wait)
    const message = t.userCodeThrottled.replaceAll('{minutes}', String(Math.ceil(wait / 60)))
    return userCodeForm(request, ctx, { userCode: typed, message }, { status, headers: new Headers(headers) })
  }
  const userCode = normalizeUserCode(typed)
  // Cannot be a code: no lookup, nothing learned, not counted.
  if (userCode === undefined)
    return userCodeForm(request, ctx, { userCode: typed, message: t.userCodeMalformed }, { status: 400 })
  const device = await ctx.store.deviceCodes.findByUserCode(userCode, ctx.now())
  if (!device) {
    ctx.emit(meta, { type: 'device.user_code_failed', reason: 'invalid_user_code' })
    if (throttle && rules.length) await throttle.limiter.fail(rules, ctx.now())
    return userCodeForm(request, ctx, { userCode: typed, message: t.userCodeInvalid }, { status: 400 })
  }
  if (device.status !== 'pending') return userCodeForm(request, ctx, { message: t.userCodeUsed }, { status: 400 })
  return device
}
