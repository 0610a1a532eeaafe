/**
 * An MCP agent (client) built on the MCP SDK that signs its user in through Gatehouse for real and
 * calls the `whoami` tool of server.mjs:
 *
 *   1. it listens on a loopback port for the redirect (RFC 8252 §7.3: http://127.0.0.1:PORT/callback);
 *   2. `client.connect` gets a 401; the SDK finds Gatehouse through the resource metadata, registers
 *      the agent (dynamic client registration, with that redirect URI) and calls
 *      `redirectToAuthorization(url)`: the agent opens the browser there (and prints the URL);
 *   3. the user signs in and consents; the browser comes back to the loopback port with `?code=…`;
 *   4. `transport.finishAuth(code)` redeems it (PKCE), and a new connection calls the tool.
 *
 * Everything is kept in memory: a real agent stores the client information and the tokens (the
 * refresh token above all) so that it signs in once, not on every start.
 *
 * Environment: MCP_URL (http://localhost:3000/mcp), CALLBACK_PORT (any free port),
 * NO_BROWSER=1 to only print the URL instead of opening a browser.
 */
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const mcpUrl = new URL(process.env.MCP_URL ?? 'http://localhost:3000/mcp')

/** The loopback listener for the redirect: resolves with the code of the first valid callback. */
async function listenForCallback(expectedState) {
  let settle
  const code = new Promise((resolve, reject) => {
    settle = { resolve, reject }
  })
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    if (url.pathname !== '/callback') {
      res.writeHead(404).end()
      return
    }
    const error = url.searchParams.get('error')
    const ok = error === null && url.searchParams.get('state') === expectedState() && url.searchParams.has('code')
    res.writeHead(ok ? 200 : 400, { 'content-type': 'text/html; charset=utf-8' })
    res.end(ok ? '<p>Signed in. You can close this tab.</p>' : '<p>The sign-in did not complete.</p>')
    if (ok) settle.resolve(url.searchParams.get('code'))
    else if (error !== null) settle.reject(new Error(`sign-in failed: ${error} ${url.searchParams.get('error_description') ?? ''}`))
    // A wrong state is ignored: only this agent's own request may complete.
  })
  await new Promise((resolve) => server.listen(Number(process.env.CALLBACK_PORT ?? 0), '127.0.0.1', resolve))
  const { port } = server.address()
  return { redirectUrl: `http://127.0.0.1:${port}/callback`, code, close: () => server.close() }
}

/** Opens `url` in the user's browser (macOS `open`, Windows `start`, else `xdg-open`). */
function openBrowser(url) {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]]
  spawn(command, args, { stdio: 'ignore', detached: true })
    .on('error', () => console.log('(could not open a browser: open the URL above yourself)'))
    .unref()
}

let state
const callback = await listenForCallback(() => state)

/** What the agent remembers: its registration, its tokens, the PKCE verifier of the sign-in. */
const saved = { client: undefined, tokens: undefined, verifier: undefined }

/** The SDK's OAuthClientProvider: the agent's metadata, its memory, and how it opens the browser. */
const authProvider = {
  redirectUrl: callback.redirectUrl,
  clientMetadata: {
    client_name: 'Gatehouse example agent',
    redirect_uris: [callback.redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none', // a public client: PKCE instead of a secret
  },
  state: () => {
    state = crypto.randomUUID()
    return state
  },
  clientInformation: () => saved.client,
  saveClientInformation: (client) => {
    saved.client = client
  },
  tokens: () => saved.tokens,
  saveTokens: (tokens) => {
    saved.tokens = tokens
  },
  saveCodeVerifier: (verifier) => {
    saved.verifier = verifier
  },
  codeVerifier: () => saved.verifier,
  redirectToAuthorization: (authorizationUrl) => {
    console.log(`Sign in at: ${authorizationUrl.href}`)
    if (process.env.NO_BROWSER !== '1') openBrowser(authorizationUrl.href)
  },
}

let transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider })
let client = new Client({ name: 'gatehouse-example-agent', version: '1.0.0' })
try {
  try {
    await client.connect(transport)
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err
    // redirectToAuthorization opened the browser; wait for it to come back with the code.
    await transport.finishAuth(await callback.code)
    transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider })
    client = new Client({ name: 'gatehouse-example-agent', version: '1.0.0' })
    await client.connect(transport)
  }
  const result = await client.callTool({ name: 'whoami', arguments: {} })
  console.log(`whoami: ${result.content[0]?.text}`)
} finally {
  await transport.close()
  callback.close()
}
