/**
 * The sign-in form's target: checks the credentials against the app's users and completes the
 * Gatehouse interaction, returning Gatehouse's Response (a 303 back to the client with the code,
 * setting Gatehouse's session cookie for single sign-on).
 */
import { gatehouse, issuer, signInUrl } from '@/lib/gatehouse'
import { checkCredentials } from '@/lib/users'

export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

/**
 * CSRF protection is the host's job: accept only same-origin form posts. Browsers send `Origin`
 * on every POST; `Sec-Fetch-Site` covers the rare one that does not.
 */
function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin')
  if (origin !== null) return origin === new URL(issuer()).origin
  return request.headers.get('sec-fetch-site') === 'same-origin'
}

const field = (form: FormData, name: string) => {
  const value = form.get(name)
  return typeof value === 'string' ? value : ''
}

export async function POST(request: Request): Promise<Response> {
  if (!sameOrigin(request)) return new Response('cross-site form post refused', { status: 403 })
  const form = await request.formData().catch(() => undefined)
  if (!form) return new Response('bad form', { status: 400 })
  const service = await gatehouse()
  const uid = field(form, 'uid')
  if (field(form, 'decision') === 'cancel') {
    return service.interactions.complete(uid, { error: 'access_denied', description: 'the user cancelled' }, request)
  }
  const user = checkCredentials(field(form, 'username'), field(form, 'password'))
  if (!user) return Response.redirect(signInUrl(uid, { error: 'credentials' }), 303)
  return service.interactions.complete(uid, { login: { sub: user.sub, amr: ['pwd'] } }, request)
}
