// Auth.js's endpoints: /api/auth/signin/gatehouse, /api/auth/callback/gatehouse, /api/auth/session, ...
import type { NextRequest } from 'next/server'
import { issuer } from '@/lib/gatehouse'
import { handlers } from '@/lib/auth'

export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

/**
 * Auth.js builds its callback URL (the redirect_uri it sends, then expects back) from the request's
 * URL. In a route handler that URL says `localhost` when the browser used 127.0.0.1 (Next's
 * NextURL rewrites loopback addresses), while the sign-in began on 127.0.0.1, where Auth.js's
 * cookies are. So, unless AUTH_URL says where the app is, Auth.js gets a plain Request on the app's
 * public URL: the issuer's origin (Gatehouse is mounted at the app's root).
 */
async function onPublicUrl(request: NextRequest): Promise<NextRequest> {
  if (process.env.AUTH_URL) return request
  const url = new URL(`${request.nextUrl.pathname}${request.nextUrl.search}`, issuer())
  const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
  return new Request(url, { method: request.method, headers: request.headers, body }) as NextRequest
}

export async function GET(request: NextRequest): Promise<Response> {
  return handlers.GET(await onPublicUrl(request))
}

export async function POST(request: NextRequest): Promise<Response> {
  return handlers.POST(await onPublicUrl(request))
}
