/**
 * The MCP client's side of enterprise-managed authorization (#45) for tests: the SDK provider that
 * presents ID-JAGs with the jwt-bearer grant, the one sign-in at the enterprise IdP, and the token
 * exchange there (oauth4webapi; @modelcontextprotocol/sdk 1.32.2 has no helper for those two).
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import * as oauth from 'oauth4webapi'
import { authorizationUrl } from './flow.ts'
import { type Caller, type SentRequest, recordingFetch, signInOverHttp, whoami } from './mcp.ts'

export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag'
export const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token'
/** oauth4webapi over plain HTTP to loopback (the test's servers). */
export const HTTP = { [oauth.allowInsecureRequests]: true } as const

/**
 * The MCP client's provider at the MCP AS: non-interactive (no redirect URL; sending the user
 * anywhere throws), pre-registered, its token request the jwt-bearer grant with a fresh ID-JAG.
 */
export class IdJagProvider implements OAuthClientProvider {
  /** Every ID-JAG presented, in order. */
  readonly assertions: string[] = []
  private saved: OAuthTokens | undefined
  private readonly information: OAuthClientInformationMixed
  private readonly obtainIdJag: () => Promise<string>

  constructor(information: OAuthClientInformationMixed, obtainIdJag: () => Promise<string>) {
    this.information = information
    this.obtainIdJag = obtainIdJag
  }

  get redirectUrl(): undefined {
    return undefined
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'MCP agent', redirect_uris: [], grant_types: [JWT_BEARER] }
  }

  clientInformation(): OAuthClientInformationMixed {
    return this.information
  }

  tokens(): OAuthTokens | undefined {
    return this.saved
  }

  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens
  }

  redirectToAuthorization(url: URL): never {
    throw new Error(`the MCP AS must not send the user to a browser: ${url.href}`)
  }

  saveCodeVerifier(): never {
    throw new Error('no authorization code flow at the MCP AS')
  }

  codeVerifier(): never {
    throw new Error('no authorization code flow at the MCP AS')
  }

  async prepareTokenRequest(): Promise<URLSearchParams> {
    const assertion = await this.obtainIdJag()
    this.assertions.push(assertion)
    return new URLSearchParams({ grant_type: JWT_BEARER, assertion })
  }
}

/** A client registered at the IdP: its id, secret and redirect URI. */
export interface IdpClient {
  clientId: string
  clientSecret: string
  redirectUri: string
}

/** alice signs in at the IdP `idp` once (code + PKCE, the built-in page): the client's ID token. */
export async function signInAtIdp(
  idp: string,
  atIdp: IdpClient,
): Promise<{ idToken: string; pages: string[]; as: oauth.AuthorizationServer }> {
  const issuer = new URL(idp)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, HTTP))
  const client: oauth.Client = { client_id: atIdp.clientId }
  const request = await authorizationUrl(as, {
    clientId: atIdp.clientId,
    redirectUri: atIdp.redirectUri,
    scope: 'openid email',
  })
  const trip = await signInOverHttp(request.url, atIdp.redirectUri, { username: 'alice', password: 'alice-password' })
  const params = oauth.validateAuthResponse(as, client, trip.callback, request.state)
  const auth = oauth.ClientSecretBasic(atIdp.clientSecret)
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    auth,
    params,
    atIdp.redirectUri,
    request.verifier,
    HTTP,
  )
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, {
    expectedNonce: request.nonce as string,
    requireIdToken: true,
  })
  return { idToken: tokens.id_token as string, pages: trip.pages, as }
}

/** The token exchange at the IdP: `idToken` for an ID-JAG for `audience` (an issuer) and `resource`. */
export async function exchangeForIdJag(
  as: oauth.AuthorizationServer,
  atIdp: IdpClient,
  idToken: string,
  audience: string,
  resource: string,
): Promise<oauth.TokenEndpointResponse> {
  const client: oauth.Client = { client_id: atIdp.clientId }
  const response = await oauth.genericTokenEndpointRequest(
    as,
    client,
    oauth.ClientSecretBasic(atIdp.clientSecret),
    TOKEN_EXCHANGE,
    { requested_token_type: ID_JAG, subject_token: idToken, subject_token_type: ID_TOKEN, audience, resource },
    HTTP,
  )
  // RFC 8693 §2.2.1: an ID-JAG is not an access token (token_type N_A).
  return oauth.processGenericTokenEndpointResponse(as, client, response, { recognizedTokenTypes: { n_a: () => {} } })
}

/** The agent's MCP session: `whoami` through the SDK's Client with `provider`, every request recorded. */
export async function whoamiAsAgent(
  resource: string,
  provider: IdJagProvider,
): Promise<{ caller: Caller; sent: SentRequest[] }> {
  const recorder = recordingFetch()
  const transport = new StreamableHTTPClientTransport(new URL(resource), {
    authProvider: provider,
    fetch: recorder.fetch,
  })
  const client = new Client({ name: 'gatehouse-enterprise-agent', version: '0.0.0' })
  try {
    await client.connect(transport)
    return { caller: await whoami(client), sent: recorder.sent }
  } finally {
    await transport.close()
  }
}
