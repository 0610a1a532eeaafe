/**
 * @module client_auth
 * Client authentication at the token, introspection and revocation endpoints (RFC 6749 §2.3):
 * client_secret_basic, client_secret_post, and `none` for public clients.
 * Checks, in order:
 * - at most one method per request (§2.3)
 * - Basic credentials are base64, split at the first `:`, each half form-url-decoded (§2.3.1)
 * - a body client_id next to Basic must name the same client
 * - the client exists; a confidential client must present a valid, unexpired secret
 * - a public client is accepted only where the endpoint allows it
 */
import { isConfidential } from '../clients.ts'
import type { Context } from '../context.ts'
import { OAuthError } from '../errors.ts'
import type { Params } from '../http.ts'
import type { ClientRecord } from '../storage/types.ts'

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none'

export interface AuthenticatedClient {
  client: ClientRecord
  method: ClientAuthMethod
}

function invalidClient(description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_client', description, { challenge: 'Basic', cause })
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '))
}

/** Parses `Authorization: Basic …` into client_id and client_secret. */
export function parseBasic(header: string): { clientId: string; clientSecret: string } {
  const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)
  if (!match?.[1]) throw invalidClient('malformed Basic credentials')
  let decoded: string
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(atob(match[1]), (c) => c.charCodeAt(0)))
  } catch (cause) {
    throw invalidClient('malformed Basic credentials', cause)
  }
  const colon = decoded.indexOf(':')
  if (colon < 0) throw invalidClient('malformed Basic credentials')
  try {
    return {
      clientId: formDecode(decoded.slice(0, colon)),
      clientSecret: formDecode(decoded.slice(colon + 1)),
    }
  } catch (cause) {
    throw invalidClient('malformed Basic credentials', cause)
  }
}

/** Authenticates the calling client. */
export async function authenticateClient(
  request: Request,
  params: Params,
  ctx: Context,
  options: { allowPublic: boolean },
): Promise<AuthenticatedClient> {
  const header = request.headers.get('authorization')
  const bodyId = params.get('client_id')
  const bodySecret = params.get('client_secret')
  let clientId: string
  let secret: string | undefined
  let method: ClientAuthMethod
  if (header !== null && /^basic /i.test(header)) {
    if (bodySecret !== undefined) {
      throw new OAuthError('invalid_request', 'use only one client authentication method')
    }
    ;({ clientId, clientSecret: secret } = parseBasic(header))
    if (bodyId !== undefined && bodyId !== clientId) {
      throw invalidClient('client_id does not match the authenticated client')
    }
    method = 'client_secret_basic'
  } else if (header !== null && header.trim() !== '') {
    throw invalidClient('unsupported Authorization scheme for client authentication')
  } else if (bodyId !== undefined) {
    clientId = bodyId
    secret = bodySecret
    method = secret === undefined ? 'none' : 'client_secret_post'
  } else {
    throw invalidClient('client authentication is required')
  }

  const client = await ctx.clients.get(clientId)
  if (!client) throw invalidClient('client authentication failed')
  if (isConfidential(client)) {
    if (secret === undefined) throw invalidClient('client authentication is required')
    if (!(await checkSecret(client, secret, ctx))) throw invalidClient('client authentication failed')
  } else {
    if (secret !== undefined) throw invalidClient('client authentication failed')
    if (!options.allowPublic) throw invalidClient('public clients cannot use this endpoint')
  }
  return { client, method }
}

async function checkSecret(client: ClientRecord, secret: string, ctx: Context): Promise<boolean> {
  const now = ctx.now()
  for (const record of client.secrets) {
    if (record.expiresAt !== undefined && record.expiresAt <= now) continue
    if (await ctx.secretCache.verify(secret, record.hash)) return true
  }
  return false
}

/** Requires a permission of the client, else `unauthorized_client`. */
export function requirePermission(client: ClientRecord, permission: string, what: string): void {
  if (!client.permissions.includes(permission)) {
    throw new OAuthError('unauthorized_client', `the client is not allowed to use ${what}`)
  }
}
