/**
 * Operating the standalone server, checked from outside: /healthz, /readyz, /metrics (METRICS=true
 * or METRICS_PORT), the landing page at /, the demo sign-in at /demo driven over HTTP, JSON log
 * lines, a busy port as one line, `npm start --config F` without `--`, and Ctrl-C saying it stopped.
 */
import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { CONFIG, CookieJar, type Running, freePort, launch, waitUntilServing, writeConfig } from './server.ts'
import { unescapeHtml } from '../helpers/browser.ts'

const NPM_START = ['npm', 'start', '--']

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function start(command: string[], env: Record<string, string> = {}) {
  const port = Number(env.PORT ?? (await freePort()))
  const issuer = env.ISSUER ?? `http://127.0.0.1:${port}`
  const server = launch(command, { HOST: '127.0.0.1', PORT: String(port), ISSUER: issuer, ...env })
  cleanups.push(async () => void (await server.stop().catch(() => undefined)))
  await waitUntilServing(server, `http://127.0.0.1:${port}/healthz`)
  return { server, port, issuer, base: `http://127.0.0.1:${port}` }
}

function config(value: unknown): string {
  const file = writeConfig(value)
  cleanups.push(file.remove)
  return file.path
}

/** Lines of `text` without npm's own: its warnings (about this machine's npmrc) and its `> script` banner. */
function lines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('npm warn') && !line.startsWith('> '))
}

async function exitWithin(server: Running, ms: number) {
  return Promise.race([
    server.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still running:\n${server.output().stderr}`)), ms),
    ),
  ])
}

async function waitForLine(server: Running, pattern: RegExp, stream: 'stdout' | 'stderr' = 'stdout') {
  for (let tries = 0; tries < 100; tries++) {
    const line = lines(server.output()[stream]).find((l) => pattern.test(l))
    if (line) return line
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`no line matching ${pattern}:\n${server.output()[stream]}`)
}

const token = (base: string, id: string, secret: string) =>
  fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${btoa(`${id}:${secret}`)}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  })

describe('npm start (demo seed)', () => {
  it('serves /healthz, /readyz, a landing page at / and no /metrics by default; the banner names the demo', async () => {
    const { server, base, issuer } = await start(NPM_START)
    const live = await fetch(`${base}/healthz`)
    expect(live.status).toBe(200)
    expect(await live.json()).toEqual({ status: 'ok' })
    const ready = await fetch(`${base}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ok' })
    expect((await fetch(`${base}/metrics`)).status).toBe(404)

    const landing = await fetch(`${base}/`)
    expect(landing.status).toBe(200)
    expect(landing.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const html = await landing.text()
    expect(html).toContain(`<code>${issuer}</code>`)
    expect(html).toContain(`href="${issuer}/.well-known/openid-configuration"`)
    expect(html).toContain(`href="${issuer}/.well-known/jwks.json"`)
    expect(html).toContain(`href="${issuer}/demo"`)
    expect(html).toMatch(/Try sign-in/)
    expect(html).toContain('<title>Gatehouse</title>') // #27 item 13: not "Gatehouse · Gatehouse"

    const banner = await waitForLine(server, /^Try the sign-in flow in a browser: /)
    expect(banner).toBe(`Try the sign-in flow in a browser: ${issuer}/demo (user alice, password alice-password)`)
    expect(lines(server.output().stdout)).toContain(
      'Health at /healthz and /readyz; metrics off (METRICS=true serves /metrics)',
    )
  })

  it('the demo client runs the whole sign-in flow over HTTP and shows the verified tokens', async () => {
    const { base } = await start(NPM_START)
    const jar = new CookieJar()
    let response = await jar.fetch(`${base}/demo`)
    expect(response.status).toBe(303)
    const authorize = new URL(response.headers.get('location') as string)
    expect(authorize.pathname).toBe('/connect/authorize')
    expect(authorize.searchParams.get('client_id')).toBe('demo-web')
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${base}/demo/callback`)
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256')
    let url = authorize.href
    let signedIn = false
    let html = ''
    for (let hops = 0; hops < 12; hops++) {
      response = await jar.fetch(url)
      if (response.status >= 300 && response.status < 400) {
        url = new URL(response.headers.get('location') as string, url).href
        continue
      }
      html = await response.text()
      const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(html)
      if (!form || signedIn) break
      // The built-in sign-in page: post the form as a browser would.
      const body = new URLSearchParams()
      for (const m of (form[2] as string).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
        body.set(unescapeHtml(m[1] as string), unescapeHtml(m[2] as string))
      }
      body.set('username', 'alice')
      body.set('password', 'alice-password')
      body.set('decision', 'login')
      signedIn = true
      response = await jar.fetch(new URL(unescapeHtml(form[1] as string), url).href, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      })
      expect(response.status).toBeGreaterThanOrEqual(300)
      url = new URL(response.headers.get('location') as string, url).href
    }
    expect(signedIn).toBe(true)
    expect(new URL(url).pathname).toBe('/demo/callback')
    expect(response.status).toBe(200)
    const page = unescapeHtml(html)
    expect(page).toContain('<h1>Signed in</h1>')
    // #27 item 13: the decoded tokens get a wide card and blocks that scroll instead of wrapping.
    expect(page).toContain('<main class="wide">')
    expect(page).toContain('<pre class="json"><code>{')
    expect(page).toContain('"sub": "demo-user-1"')
    expect(page).toContain('"email": "alice@example.com"')
    expect(page).toContain('"typ": "at+jwt"')
    expect(page).toContain('"aud": "demo-web"')
    // A reload has no sign-in in progress any more (the demo cookie was cleared).
    const again = await jar.fetch(url)
    expect(again.status).toBe(400)
  })

  it('a busy port is one line naming PORT, no stack trace, exit 1', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
    const port = (blocker.address() as { port: number }).port
    const server = launch(NPM_START, { HOST: '127.0.0.1', PORT: String(port) })
    cleanups.push(async () => void (await server.stop().catch(() => undefined)))
    const exit = await exitWithin(server, 20_000)
    expect(exit.code).toBe(1)
    expect(lines(server.output().stderr)).toEqual([`gatehouse: port ${port} is in use; set PORT to another port`])
  })

  it('Ctrl-C (SIGINT) prints that the server stopped and exits 0', async () => {
    const { server } = await start(NPM_START)
    if (server.child.pid !== undefined) process.kill(-server.child.pid, 'SIGINT')
    const exit = await exitWithin(server, 15_000)
    // npm itself ends by the signal it got; the server under it stops cleanly and says so.
    expect(exit.code === 0 || exit.signal === 'SIGINT', JSON.stringify(exit)).toBe(true)
    await waitForLine(server, /^Gatehouse stopped$/)
    const out = lines(server.output().stdout)
    expect(out.at(-2)).toBe('SIGINT: stopping; requests in flight get up to 10 s')
    expect(out.at(-1)).toBe('Gatehouse stopped')
  })
})

describe('npm start with a configuration file', () => {
  it.each([
    ['--config F', (path: string) => ['--config', path]],
    ['--config=F', (path: string) => [`--config=${path}`]],
  ])('npm start %s without --: honoured with a warning, and the start says what it loaded', async (_form, flags) => {
    const path = config(CONFIG)
    // npm takes --config for itself (npm_config_config): `true` with the file name left alone as an
    // argument, or the file name itself.
    const { server, base, issuer } = await start(['npm', 'start', ...flags(path)])
    const warning = await waitForLine(server, /npm took --config/, 'stderr')
    expect(warning).toBe(
      `gatehouse: npm took --config for itself; using ${path} as the configuration file (pass flags after --: npm start -- --config ${path})`,
    )
    expect(lines(server.output().stdout)).toContain(
      `Loaded ${path}: issuer ${issuer}, in-memory store, ${CONFIG.clients.length} clients, 1 user`,
    )
    expect((await token(base, 'rt-service', 'rt-service-secret')).status).toBe(200)
    expect((await token(base, 'demo-service', 'demo-service-secret')).status).toBe(401)
    // no demo client with a configuration file
    expect((await fetch(`${base}/demo`)).status).toBe(404)
    expect(await (await fetch(`${base}/`)).text()).not.toContain('Try sign-in')
  })

  it('METRICS=true and LOG_FORMAT=json: Prometheus text at /metrics, every output line a JSON object', async () => {
    const path = config(CONFIG)
    const { server, base } = await start([...NPM_START, '--config', path], { METRICS: 'true', LOG_FORMAT: 'json' })
    expect((await token(base, 'rt-service', 'rt-service-secret')).status).toBe(200)
    expect((await token(base, 'rt-service', 'wrong')).status).toBe(401)
    const response = await fetch(`${base}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await response.text()
    expect(text).toContain('# TYPE gatehouse_http_requests_total counter\n')
    expect(text).toContain('gatehouse_http_requests_total{endpoint="token",status="200"} 1\n')
    expect(text).toContain('gatehouse_http_requests_total{endpoint="token",status="401"} 1\n')
    expect(text).toContain('gatehouse_http_request_duration_seconds_bucket{endpoint="token",le="+Inf"} 2\n')
    expect(text).toContain('gatehouse_tokens_issued_total{grant_type="client_credentials"} 1\n')
    expect(text).toContain('gatehouse_client_authentication_failures_total{reason="invalid_secret"} 1\n')
    expect(text).toContain('gatehouse_store_errors_total 0\n')

    await server.stop()
    // npm may end before the server under it has written its last line.
    await waitForLine(server, /"msg":"Gatehouse stopped"/)
    const out = lines(server.output().stdout)
    expect(out.length).toBeGreaterThan(3)
    const records = out.map((line) => JSON.parse(line) as Record<string, unknown>)
    for (const record of records) {
      expect(record).toMatchObject({ time: expect.any(String), level: 'info', msg: expect.any(String) })
    }
    expect(records[0]).toMatchObject({
      config: path,
      clients: CONFIG.clients.length,
      users: 1,
      store: 'in-memory store',
    })
    expect(records.find((r) => String(r.msg).includes('listening on'))).toMatchObject({ runtime: 'node' })
    expect(records.at(-1)?.msg).toBe('Gatehouse stopped')
    for (const line of lines(server.output().stderr)) expect(() => JSON.parse(line), line).not.toThrow()
    expect(server.output().stdout).not.toContain('rt-service-secret')
  })

  it('METRICS_PORT serves the metrics on their own port only', async () => {
    const metricsPort = await freePort()
    const { base } = await start([...NPM_START, '--config', config(CONFIG)], { METRICS_PORT: String(metricsPort) })
    expect((await fetch(`${base}/metrics`)).status).toBe(404)
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('# TYPE gatehouse_tokens_issued_total counter')
  })

  it.each([
    ['LOG_FORMAT', 'xml', 'LOG_FORMAT must be text or json, got "xml"'],
    ['SHUTDOWN_TIMEOUT', 'soon', 'SHUTDOWN_TIMEOUT must be a number of seconds, got "soon"'],
    ['METRICS', 'yes', 'METRICS must be true or false, got "yes"'],
  ])('a bad %s stops start-up naming it', async (name, value, message) => {
    const server = launch([...NPM_START, '--config', config(CONFIG)], {
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      [name]: value,
    })
    cleanups.push(async () => void (await server.stop().catch(() => undefined)))
    const exit = await exitWithin(server, 20_000)
    expect(exit.code).toBe(1)
    expect(lines(server.output().stderr)).toEqual([`gatehouse: ${message}`])
  })
})
