/**
 * #19 on every runtime: the start script (Node through tsx, Bun, Deno) with a configuration file
 * that turns on dynamic client registration and names an MCP resource (a scope's audience). Over
 * real HTTP: a public client registers itself (RFC 7591), signs alice in through login and consent,
 * redeems the code with `resource` (RFC 8707) and gets an access token whose `aud` is exactly the
 * resource; a refresh narrows to it again; an unknown resource is `invalid_target`.
 */
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signInOverHttp } from '../helpers/mcp.ts'
import { CONFIG, type Running, RUNTIMES, freePort, launch, runnable, waitUntilServing, writeConfig } from './server.ts'

const options = { [oauth.allowInsecureRequests]: true }
const REDIRECT_URI = 'http://127.0.0.1:9/mcp-client/callback'

describe.each(RUNTIMES)('#19 $name: registration and resources', ({ command }) => {
  let config: ReturnType<typeof writeConfig> | undefined
  let server: Running | undefined
  let issuer = ''
  let resource = ''
  let as: oauth.AuthorizationServer

  beforeAll(async () => {
    const port = await freePort()
    issuer = `http://127.0.0.1:${port}`
    resource = `${issuer}/mcp`
    config = writeConfig({
      ...CONFIG,
      scopes: [{ name: 'mcp:tools', audience: resource }],
      dynamicClientRegistration: { scopes: ['mcp:tools', 'openid', 'offline_access'] },
    })
    server = launch([...(await runnable(command)), '--config', config.path], {
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
    })
    await waitUntilServing(server, `${issuer}/.well-known/oauth-authorization-server`)
    const url = new URL(issuer)
    as = await oauth.processDiscoveryResponse(
      url,
      await oauth.discoveryRequest(url, { ...options, algorithm: 'oauth2' }),
    )
  })

  afterAll(async () => {
    try {
      await server?.stop()
    } finally {
      config?.remove()
    }
  })

  it('#19 a client registers itself, signs in with resource and gets aud = the resource; refresh and invalid_target too', async () => {
    expect(as.registration_endpoint).toBe(`${issuer}/connect/register`)
    const registered = await fetch(as.registration_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Runtime MCP client',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'none',
      }),
    })
    expect(registered.status).toBe(201)
    const { client_id } = (await registered.json()) as { client_id: string }
    const client: oauth.Client = { client_id, token_endpoint_auth_method: 'none' }

    const verifier = oauth.generateRandomCodeVerifier()
    const authorize = new URL(as.authorization_endpoint as string)
    for (const [name, value] of Object.entries({
      client_id,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'mcp:tools',
      resource,
      state: 'rt-state',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    })) {
      authorize.searchParams.set(name, value)
    }
    const trip = await signInOverHttp(authorize, REDIRECT_URI, { username: 'alice', password: 'alice-password' })
    expect(trip.pages).toEqual(['login', 'consent'])
    const params = oauth.validateAuthResponse(as, client, trip.callback, 'rt-state')
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      REDIRECT_URI,
      verifier,
      {
        ...options,
        additionalParameters: { resource },
      },
    )
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
    expect(decodeJwt(tokens.access_token).aud).toBe(resource)
    expect(tokens.scope).toBe('mcp:tools')
    expect(tokens.refresh_token).toBeDefined()

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token as string, {
        ...options,
        additionalParameters: { resource },
      }),
    )
    expect(decodeJwt(refreshed.access_token).aud).toBe(resource)

    const wrong = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token as string, {
      ...options,
      additionalParameters: { resource: 'https://elsewhere.example/mcp' },
    })
    expect(wrong.status).toBe(400)
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_target')
  })
})
