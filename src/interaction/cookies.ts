/**
 * @module interaction/cookies
 * The session and browser-binding cookies (RFC 6265): HttpOnly, SameSite=Lax, Secure with https,
 * scoped to the issuer's path.
 */
import type { Context } from '../context.ts'

/** Reads one cookie from a Cookie header; malformed headers yield undefined. */
export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie')
  if (header === null) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() !== name) continue
    const value = part.slice(eq + 1).trim()
    return /^[A-Za-z0-9_-]{16,128}$/.test(value) ? value : undefined
  }
  return undefined
}

function cookiePath(ctx: Context): string {
  const path = new URL(ctx.config.issuer).pathname
  return path === '' ? '/' : path
}

/** A Set-Cookie value. `maxAge` 0 deletes the cookie. */
export function setCookie(ctx: Context, name: string, value: string, maxAge: number): string {
  const parts = [`${name}=${value}`, `Path=${cookiePath(ctx)}`, 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAge}`]
  if (ctx.secureCookies) parts.push('Secure')
  return parts.join('; ')
}

/** Name of the cookie that binds interactions to one browser. */
export function browserCookieName(ctx: Context): string {
  return `${ctx.config.cookieName}.browser`
}
