/**
 * @module clients/ciba_metadata
 * The CIBA members of a self-registered client's metadata (OpenID CIBA Core 1.0 §4):
 * `backchannel_token_delivery_mode` (`poll`, the default, or `ping`) and
 * `backchannel_client_notification_endpoint` (required with `ping`; https on a public host, as
 * `jwks_uri`), kept only for a client that registered the CIBA grant.
 */
import { OAuthError } from '../errors.ts'
import type { ClientMetadata, ClientRecord } from '../storage/index.ts'

const CIBA_GRANT = 'urn:openid:params:grant-type:ciba'

type CibaMetadata = Pick<ClientMetadata, 'backchannel_token_delivery_mode' | 'backchannel_client_notification_endpoint'>

/** The CIBA members of registration metadata; `publicUri` checks the notification endpoint. */
export function parseCibaMetadata(
  input: Record<string, unknown>,
  grantTypes: readonly string[],
  publicUri: (value: unknown, field: string) => string,
): CibaMetadata {
  if (!grantTypes.includes(CIBA_GRANT)) return {}
  const mode = input.backchannel_token_delivery_mode ?? 'poll'
  if (mode !== 'poll' && mode !== 'ping') {
    throw new OAuthError('invalid_client_metadata', 'backchannel_token_delivery_mode must be poll or ping')
  }
  if (mode === 'poll') return { backchannel_token_delivery_mode: 'poll' }
  if (input.backchannel_client_notification_endpoint === undefined) {
    throw new OAuthError('invalid_client_metadata', 'ping mode needs backchannel_client_notification_endpoint')
  }
  const endpoint = publicUri(input.backchannel_client_notification_endpoint, 'backchannel_client_notification_endpoint')
  return { backchannel_token_delivery_mode: 'ping', backchannel_client_notification_endpoint: endpoint }
}

/** The client record fields of the CIBA metadata. */
export function cibaFields(
  metadata: CibaMetadata,
): Pick<ClientRecord, 'backchannelTokenDeliveryMode' | 'backchannelClientNotificationEndpoint'> {
  return {
    ...(metadata.backchannel_token_delivery_mode !== undefined
      ? { backchannelTokenDeliveryMode: metadata.backchannel_token_delivery_mode }
      : {}),
    ...(metadata.backchannel_client_notification_endpoint !== undefined
      ? { backchannelClientNotificationEndpoint: metadata.backchannel_client_notification_endpoint }
      : {}),
  }
}
