import { issuer } from '@/lib/gatehouse'

export const dynamic = 'force-dynamic'

export default function Home() {
  const base = issuer().replace(/\/$/, '')
  return (
    <main>
      <h1>Gatehouse on Next.js</h1>
      <p>
        An OAuth 2.0 / OpenID Connect token service mounted in this app&apos;s route handlers. Issuer:{' '}
        <code>{issuer()}</code>
      </p>
      <ul>
        <li>
          <a href={`${base}/.well-known/openid-configuration`}>/.well-known/openid-configuration</a>
        </li>
        <li>
          <a href={`${base}/.well-known/jwks.json`}>/.well-known/jwks.json</a>
        </li>
        <li>
          <code>/connect/token</code>, <code>/connect/authorize</code>, <code>/connect/userinfo</code>, ...
        </li>
      </ul>
      <p>
        This app also signs its own visitors in through it with Auth.js: <a href="/account">/account</a>.
      </p>
    </main>
  )
}
