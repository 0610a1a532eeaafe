/**
 * The app's own sign-in page. Gatehouse's interaction hook (lib/gatehouse.ts) sends the browser
 * here with the interaction id; the form posts to ./submit, which checks the password and hands
 * the result back to Gatehouse.
 */
import { gatehouse } from '@/lib/gatehouse'

export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

const ERRORS: Record<string, string> = {
  credentials: 'Wrong username or password.',
}

export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>
}) {
  const params = await searchParams
  const uid = typeof params.uid === 'string' ? params.uid : ''
  const pending = uid ? await (await gatehouse()).interactions.get(uid) : undefined
  if (!pending) {
    return (
      <main>
        <h1>Sign-in expired</h1>
        <p>This sign-in request has expired or was already used. Go back to the application and start again.</p>
      </main>
    )
  }
  const error = typeof params.error === 'string' ? ERRORS[params.error] : undefined
  return (
    <main>
      <h1>Sign in to {pending.clientName}</h1>
      <p>
        It asks for: <code>{pending.scopes.join(' ')}</code>
      </p>
      {error ? <p role="alert">{error}</p> : null}
      <form method="post" action="/signin/submit">
        <input type="hidden" name="uid" value={uid} />
        <p>
          <label>
            Username <input name="username" autoComplete="username" defaultValue={pending.loginHint ?? ''} required />
          </label>
        </p>
        <p>
          <label>
            Password <input name="password" type="password" autoComplete="current-password" required />
          </label>
        </p>
        <button type="submit" name="decision" value="login">
          Sign in
        </button>{' '}
        <button type="submit" name="decision" value="cancel" formNoValidate>
          Cancel
        </button>
      </form>
    </main>
  )
}
