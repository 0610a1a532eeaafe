/**
 * #30, Basic OP plan, module `oidcc-server-client-secret-post` (OIDCCServerTestClientSecretPost,
 * OP-ClientAuth-SecretPost-Static/Dynamic): the happy flow with `client_secret_post`, using the
 * static client the suite takes from its `client_secret_post` configuration block. Discovery must
 * list the method (EnsureServerConfigurationSupportsClientSecretPost), and the client that
 * registered it authenticates with it; the same client trying Basic is refused, so the method
 * really was the one checked.
 */
import * as oauth from 'oauth4webapi'
import { describe, expect, it } from 'vitest'
import {
  CLIENT_AUTH_VARIANTS,
  buildRequest,
  checkCodeCallback,
  codeFlow,
  createSuite,
  runAuthorization,
} from './suite.ts'

const post = CLIENT_AUTH_VARIANTS.find(
  (c) => c.method === 'client_secret_post',
) as (typeof CLIENT_AUTH_VARIANTS)[number]

describe('#30 oidcc-server-client-secret-post (client_secret_post)', () => {
  it('#30 oidcc-server-client-secret-post (TOK-10, DISC-10): the happy flow with client_secret_post', async () => {
    const suite = await createSuite()
    expect(suite.as.token_endpoint_auth_methods_supported).toContain('client_secret_post')
    const flow = await codeFlow(suite, { client: post })
    expect(flow.idToken.aud).toBe(post.client.client_id)

    const request = await buildRequest(suite.as, { client: post })
    const { callback } = await runAuthorization(suite.browser, request.url)
    const params = checkCodeCallback(suite, callback, request, post)
    const basic = await oauth.authorizationCodeGrantRequest(
      suite.as,
      post.client,
      oauth.ClientSecretBasic(post.secret),
      params,
      request.params.get('redirect_uri') as string,
      oauth.nopkce,
      suite.opts,
    )
    expect(basic.status).toBe(401)
    expect(await basic.json()).toMatchObject({ error: 'invalid_client' })
  })
})
