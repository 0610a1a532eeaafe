/**
 * TOK-09 TOK-11 TOK-12: client authentication failures at the token endpoint. Every answer is
 * asserted for status, Content-Type application/json and a string `error`.
 */
import * as oauth from 'oauth4webapi'
import { beforeAll, describe, expect, it } from 'vitest'
import { ISSUER, basic, discover, form, inProcess, makeService } from '../../helpers/service.ts'

const NQSCHAR = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
const TOKEN = `${ISSUER}/connect/token`
const CC = { grant_type: 'client_credentials' }

let service: Awaited<ReturnType<typeof makeService>>['service']
let as: oauth.AuthorizationServer

beforeAll(async () => {
  ;({ service } = await makeService())
  as = await discover(service.fetch)
})

async function expectError(response: Response, status: number, error: string) {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/json/)
  expect(response.headers.get('cache-control')).toBe('no-store')
  const body = (await response.json()) as Record<string, unknown>
  expect(typeof body.error).toBe('string')
  expect(body.error).toBe(error)
  expect(body.error).toMatch(NQSCHAR)
  expect(body.error_description).toMatch(NQSCHAR)
  expect(body).not.toHaveProperty('access_token')
  return body as { error: string; error_description: string }
}

function expectBasicChallenge(response: Response) {
  expect(response.headers.get('www-authenticate')).toBe(`Basic realm="${ISSUER}"`)
}

describe('token endpoint: client authentication errors', () => {
  it('TOK-09: a wrong secret via Basic → 401 invalid_client + WWW-Authenticate: Basic realm', async () => {
    const response = await service.fetch(form(TOKEN, CC, { authorization: basic('service', 'wrong') }))
    expectBasicChallenge(response)
    await expectError(response, 401, 'invalid_client')
  })

  it('TOK-09: an unknown client via Basic → 401 invalid_client + WWW-Authenticate: Basic', async () => {
    const response = await service.fetch(form(TOKEN, CC, { authorization: basic('nobody', 'service-secret') }))
    expectBasicChallenge(response)
    await expectError(response, 401, 'invalid_client')
  })

  it('TOK-09: a wrong secret via client_secret_post → 401 invalid_client with the JSON body', async () => {
    const response = await service.fetch(form(TOKEN, { ...CC, client_id: 'service', client_secret: 'wrong' }))
    await expectError(response, 401, 'invalid_client')
  })

  it('TOK-09: an unknown client via client_secret_post → 401 invalid_client', async () => {
    const response = await service.fetch(form(TOKEN, { ...CC, client_id: 'nobody', client_secret: 'x' }))
    await expectError(response, 401, 'invalid_client')
  })

  it('TOK-09: an unknown client and a wrong secret are indistinguishable', async () => {
    const unknown = await expectError(
      await service.fetch(form(TOKEN, CC, { authorization: basic('nobody', 'x') })),
      401,
      'invalid_client',
    )
    const wrong = await expectError(
      await service.fetch(form(TOKEN, CC, { authorization: basic('service', 'x') })),
      401,
      'invalid_client',
    )
    expect(unknown).toEqual(wrong)
  })

  it('TOK-09: oauth4webapi sees the Basic challenge on a wrong secret', async () => {
    const client = { client_id: 'service' }
    for (const auth of [oauth.ClientSecretBasic('wrong'), oauth.ClientSecretPost('wrong')]) {
      const response = await oauth.clientCredentialsGrantRequest(as, client, auth, {}, inProcess(service.fetch))
      const err = await oauth.processClientCredentialsResponse(as, client, response).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
      expect(err).toMatchObject({ status: 401 })
      expect((err as oauth.WWWAuthenticateChallengeError).cause[0]).toMatchObject({
        scheme: 'basic',
        parameters: { realm: ISSUER },
      })
    }
  })

  it('no credentials at all → 401 invalid_client', async () => {
    const response = await service.fetch(form(TOKEN, CC))
    expectBasicChallenge(response)
    await expectError(response, 401, 'invalid_client')
  })

  it('TOK-12: a confidential client sending only client_id → 401 invalid_client', async () => {
    await expectError(await service.fetch(form(TOKEN, { ...CC, client_id: 'service' })), 401, 'invalid_client')
  })

  it('TOK-11: Basic and client_secret in the body → 400 invalid_request', async () => {
    const response = await service.fetch(
      form(TOKEN, { ...CC, client_secret: 'service-secret' }, { authorization: basic('service', 'service-secret') }),
    )
    await expectError(response, 400, 'invalid_request')
  })

  it('TOK-11: Basic and a body client_id naming another client → 401 invalid_client', async () => {
    const response = await service.fetch(
      form(TOKEN, { ...CC, client_id: 'api1' }, { authorization: basic('service', 'service-secret') }),
    )
    await expectError(response, 401, 'invalid_client')
  })

  it('TOK-11: Basic with the same client_id in the body is fine', async () => {
    const response = await service.fetch(
      form(TOKEN, { ...CC, client_id: 'service' }, { authorization: basic('service', 'service-secret') }),
    )
    expect(response.status).toBe(200)
  })

  it.each([
    ['not base64', 'Basic ***'],
    ['no colon', `Basic ${btoa('service')}`],
    ['bad percent-encoding', `Basic ${btoa('service:%zz')}`],
    ['invalid UTF-8', `Basic ${btoa('service:\xff')}`],
    ['the scheme alone', 'Basic'],
    ['an empty credential', 'Basic '],
    ['a Bearer token', 'Bearer abc'],
    ['Digest', 'Digest username="service"'],
    ['the un-encoded credentials of a+b:c%d/e', `Basic ${btoa('a+b:c%d/e:a+b:c%d/e')}`],
  ])('malformed Authorization (%s) → 401 invalid_client', async (_, authorization) => {
    const response = await service.fetch(form(TOKEN, CC, { authorization }))
    expectBasicChallenge(response)
    await expectError(response, 401, 'invalid_client')
  })

  it('the secret of one client does not authenticate another', async () => {
    await expectError(
      await service.fetch(form(TOKEN, CC, { authorization: basic('service', 'api1-secret') })),
      401,
      'invalid_client',
    )
  })
})
