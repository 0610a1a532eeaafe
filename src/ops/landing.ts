/**
 * @module ops/landing
 * The standalone server's page at `/`: what this is, the issuer, links to the discovery document
 * and the JWKS, the operational endpoints and, with the demo seed, the demo sign-in. Every value
 * is escaped; the page is one of the built-in pages (same CSP and theme).
 */
import type { Endpoint } from '../context.ts'
import { escapeHtml as e } from '../http.ts'
import { type Theme, page } from '../pages/index.ts'

export interface LandingInput {
  issuer: string
  endpoints: Record<Endpoint, string>
  /** The demo client's start URL (with the demo seed), and who to sign in as. */
  demo?: { url: string; username: string; password: string }
  /** Operational paths served by this server (health, readiness, metrics). */
  operations?: { label: string; path: string }[]
}

/** Renders the landing page. */
export function landingPage(theme: Theme, input: LandingInput): Response {
  const link = (href: string, text: string) => `<li><a href="${e(href)}">${e(text)}</a> <code>${e(href)}</code></li>`
  const demo = input.demo
    ? `<p><a href="${e(input.demo.url)}"><strong>Try sign-in</strong></a>: a demo client runs the authorization code
flow and shows the tokens it receives. Sign in as <code>${e(input.demo.username)}</code> with the password
<code>${e(input.demo.password)}</code>.</p>`
    : ''
  const operations = input.operations?.length
    ? `<p>Operations</p><ul>${input.operations.map((op) => link(op.path, op.label)).join('')}</ul>`
    : ''
  const body = `<p class="lead">An OAuth 2.0 and OpenID Connect token service.</p>
<p>Issuer <code>${e(input.issuer)}</code></p>
${demo}
<p>Metadata</p><ul>
${link(input.endpoints.openidConfiguration, 'OpenID Connect discovery')}
${link(input.endpoints.oauthMetadata, 'OAuth 2.0 authorization server metadata')}
${link(input.endpoints.jwks, 'JSON Web Key Set')}
</ul>
${operations}`
  // Titled with the product name: the page shell then says it once (not "Gatehouse · Gatehouse").
  return page(theme, theme.productName ?? 'Gatehouse', body)
}
