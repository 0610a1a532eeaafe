/**
 * A page of the app behind Auth.js: who is signed in (from the Auth.js session, whose user Auth.js
 * took from Gatehouse's ID token), with sign-in and sign-out buttons (server actions).
 */
import { auth, signIn, signOut } from '@/lib/auth'

export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

export default async function AccountPage() {
  const session = await auth()
  const user = session?.user
  if (!user) {
    return (
      <main>
        <h1>Not signed in</h1>
        <form
          action={async () => {
            'use server'
            await signIn('gatehouse', { redirectTo: '/account' })
          }}
        >
          <button type="submit">Sign in with Gatehouse</button>
        </form>
      </main>
    )
  }
  return (
    <main>
      <h1>Signed in</h1>
      <p>
        Name: <span data-testid="name">{user.name}</span>
      </p>
      <p>
        Email: <span data-testid="email">{user.email}</span>
      </p>
      <form
        action={async () => {
          'use server'
          await signOut({ redirectTo: '/account' })
        }}
      >
        <button type="submit">Sign out</button>
      </form>
    </main>
  )
}
