/**
 * @module clients/metadata_document_schema
 * The members of a Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document §4.1,
 * RFC 7591 §2 names) the service reads, and what each may hold: `redirect_uris` and
 * `post_logout_redirect_uris` by the rule of dynamic registration (https, loopback http, a
 * private-use scheme in reverse domain name form or one of the option's `redirectSchemes`:
 * RFC 8252 §7, src/clients/self_registered_redirects.ts), a `client_name` without control or bidi override
 * characters, no secret; `backchannel_logout_uri` (Back-Channel Logout 1.0 §2.2) https without a
 * fragment on a host that is not a literal private or local address (checked again at delivery).
 */
import * as v from 'valibot'
import { isPublicAddress } from '../security/index.ts'
import { isSafeText, isSelfRegisteredRedirectUri } from './self_registered_redirects.ts'

/** Redirect URIs by the rule of dynamic registration (RFC 8252 §7), with the host's extra schemes. */
const redirectUrisOf = (schemes: ReadonlySet<string>) =>
  v.pipe(
    v.array(
      v.pipe(
        v.string(),
        v.check((uri) => isSelfRegisteredRedirectUri(uri, schemes)),
      ),
    ),
    v.minLength(1),
    v.maxLength(20),
  )

/**
 * The members of a document the service reads; others are ignored (RFC 7591 §2: unknown ones are).
 * `schemes`: the option's `redirectSchemes`.
 */
export const documentSchema = (schemes: ReadonlySet<string>) =>
  v.looseObject({
    client_id: v.string(),
    redirect_uris: redirectUrisOf(schemes),
    post_logout_redirect_uris: v.optional(redirectUrisOf(schemes)),
    // As at registration: no control or bidi override characters (a trailing U+202E would reverse the
    // consent page's warning), and not blank.
    client_name: v.optional(
      v.pipe(
        v.string(),
        v.minLength(1),
        v.maxLength(200),
        v.check(isSafeText),
        v.check((name) => name.trim() !== ''),
      ),
    ),
    // RFC 7591 §2 defaults this to client_secret_basic, which a document cannot use (it holds no
    // secret, draft §4.1): absent is read as none. private_key_jwt needs jwks_uri (MCP allows it).
    token_endpoint_auth_method: v.optional(v.picklist(['none', 'private_key_jwt'])),
    jwks_uri: v.optional(v.pipe(v.string(), v.maxLength(2048), v.startsWith('https://'), v.url(), v.check(isSafeText))),
    backchannel_logout_uri: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(2048),
        v.startsWith('https://'),
        v.url(),
        v.check((uri) => isSafeText(uri) && !uri.includes('#') && isPublicHttpsHost(uri)),
      ),
    ),
    backchannel_logout_session_required: v.optional(v.boolean()),
    grant_types: v.optional(v.pipe(v.array(v.picklist(['authorization_code', 'refresh_token'])), v.maxLength(2))),
    response_types: v.optional(v.array(v.literal('code'))),
    scope: v.optional(v.pipe(v.string(), v.maxLength(4096))),
    // RFC 9396 §10: cut to the service's types.
    authorization_details_types: v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(200))), v.maxLength(100))),
    // Draft §4.1: a document must not carry a secret (anyone can read it).
    client_secret: v.optional(v.never()),
    client_secret_expires_at: v.optional(v.never()),
  })

/** Whether an https URL's host is not a literal private or local address nor a `localhost` name. */
function isPublicHttpsHost(uri: string): boolean {
  const url = new URL(uri)
  const host = url.hostname.toLowerCase().replace(/\.$/, '')
  if (url.username !== '' || url.password !== '') return false
  return isPublicAddress(host) !== false && host !== 'localhost' && !host.endsWith('.localhost')
}
