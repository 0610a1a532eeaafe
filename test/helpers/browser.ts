/**
 * A minimal browser for the code flow: keeps cookies, follows redirects by hand up to the client's
 * redirect URI, and signs in through the built-in HTML form as a person would.
 */
type Handler = (request: Request) => Promise<Response>

export interface Page {
  status: number
  url: string
  html: string
  response: Response
}

export class Browser {
  readonly cookies = new Map<string, string>()

  readonly handler: Handler
  /** URLs starting with one of these are the client's: never fetched, returned as the final Location. */
  readonly clientPrefixes: string[]

  constructor(
    handler: Handler,
    clientPrefixes = [
      'https://rp.example.test',
      'https://rp2.example.test',
      'https://spa.example.test',
      'https://consent.example.test',
    ],
  ) {
    this.handler = handler
    this.clientPrefixes = clientPrefixes
  }

  cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  private store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';')
      const eq = (pair ?? '').indexOf('=')
      const name = (pair ?? '').slice(0, eq).trim()
      const value = (pair ?? '').slice(eq + 1).trim()
      if (attrs.some((a) => /max-age=0$/i.test(a.trim()))) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  /** One request with the jar's cookies; no redirects followed. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0) headers.set('cookie', this.cookieHeader())
    const response = await this.handler(new Request(url, { ...init, headers, redirect: 'manual' }))
    this.store(response)
    return response
  }

  /**
   * Requests `url` and follows redirects until a page is shown or a client URL is reached.
   * Returns either the final page or the client's callback URL.
   */
  async navigate(url: string, init: RequestInit = {}): Promise<{ page?: Page; callback?: URL }> {
    let response = await this.request(url, init)
    let current = url
    for (let hops = 0; hops < 10; hops++) {
      if (response.status < 300 || response.status >= 400) {
        return { page: { status: response.status, url: current, html: await response.text(), response } }
      }
      const location = response.headers.get('location')
      if (!location) throw new Error(`redirect without Location from ${current}`)
      const next = new URL(location, current).href
      if (this.clientPrefixes.some((prefix) => next.startsWith(prefix))) return { callback: new URL(next) }
      current = next
      response = await this.request(next)
    }
    throw new Error('too many redirects')
  }

  /** Submits the first form on a page with its hidden inputs plus `fields`. */
  async submit(page: Page, fields: Record<string, string>): Promise<{ page?: Page; callback?: URL }> {
    const formMatch = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(page.html)
    if (!formMatch) throw new Error(`no form on the page:\n${page.html}`)
    const action = unescapeHtml(formMatch[1] as string)
    const body = new URLSearchParams()
    for (const m of (formMatch[2] as string).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      body.set(unescapeHtml(m[1] as string), unescapeHtml(m[2] as string))
    }
    for (const [name, value] of Object.entries(fields)) body.set(name, value)
    return this.navigate(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
  }

  /** Signs in on the built-in page shown at `page`. */
  async signIn(page: Page, username: string, password: string) {
    return this.submit(page, { username, password, decision: 'login' })
  }
}

/** How a browser reads text or an attribute value back: the inverse of HTML escaping. */
export function unescapeHtml(html: string): string {
  return html
    .replace(/&quot;/g, '"')
    .replace(/&#x27;|&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
}
