/**
 * @module events/types
 * The audit events the host's `onEvent` hook receives (see `src/events/emitter.ts` for the emitter): what
 * happened, to which client, subject, grant and token id. Types only, so the option types can name
 * the hook without importing the emitter.
 */

/** Why a client authentication failed (the `client.authentication_failed` audit event's reason). */
export type ClientAuthenticationFailure =
  | 'unknown_client'
  | 'invalid_secret'
  | 'missing_secret'
  | 'network_not_allowed'
  | 'throttled'
  | 'invalid_assertion'
  | 'keys_unavailable'
  | 'replayed'
  | 'method_not_allowed'
  | 'secret_hash_unverifiable'

/** Fields every event carries. */
export interface EventBase {
  /** Epoch seconds. */
  time: number
  /** The request's id: its `X-Request-Id` header when it sent a well-formed one, else a random UUID. */
  requestId: string
  /** The source address the adapter (or `clientAddress`) reported, when known. */
  address?: string
}

/** What a token-related event names. Values are identifiers, never token values. */
interface Subjects {
  clientId: string
  /** The end-user (or, for client_credentials, the client) the token is about. */
  sub?: string
  /** The grant (refresh token family) id. */
  grantId?: string
  /** The access token's `jti`. */
  jti?: string
}

/** Every audit event, discriminated by `type`. */
export type GatehouseEvent = EventBase &
  (
    | ({
        type: 'token.issued'
        grantType:
          | 'client_credentials'
          | 'authorization_code'
          | 'urn:ietf:params:oauth:grant-type:device_code'
          | 'urn:openid:params:grant-type:ciba'
          | 'urn:ietf:params:oauth:grant-type:jwt-bearer'
        scope: string
        /** The jwt-bearer grant (#45): the identity provider whose ID-JAG was redeemed (its `iss`). */
        assertionIssuer?: string
        /** RFC 9396: the types of the token's authorization details, when it has any (never their fields). */
        authorizationDetailsTypes?: string[]
      } & Subjects)
    | ({
        /** RFC 8628: `clientId` started a device authorization (grant `grantId`) asking for `scope`. */
        type: 'device.authorization_started'
        scope: string
      } & Subjects)
    | {
        /**
         * RFC 8628 §5.2: a device authorization request of `clientId` was refused (429) for too
         * many from its source address or of the client (`throttle.deviceAuthorization`).
         */
        type: 'device.authorization_throttled'
        clientId: string
      }
    | ({
        /** The end-user `sub` approved the device authorization. */ type: 'device.approved'
        scope: string
      } & Subjects)
    | ({ /** The end-user `sub` denied the device authorization. */ type: 'device.denied' } & Subjects)
    | ({
        /** The approved device code was redeemed at the token endpoint (once). */ type: 'device.redeemed'
      } & Subjects)
    | {
        /**
         * A user code entered at the verification page (RFC 8628 §3.3) named no pending device
         * authorization (`invalid_user_code`: unknown or expired), or the source address was
         * throttled for too many wrong codes (`throttled`). Never carries the code typed.
         */
        type: 'device.user_code_failed'
        reason: 'invalid_user_code' | 'throttled'
      }
    | ({
        type: 'token.refreshed'
        scope: string
        /** RFC 9396: the types of the token's authorization details, when it has any. */
        authorizationDetailsTypes?: string[]
      } & Subjects)
    | ({
        /** OpenID CIBA: `clientId` asked the end-user `sub` (grant `grantId`) for `scope`. */
        type: 'ciba.requested'
        scope: string
        deliveryMode: 'poll' | 'ping'
      } & Subjects)
    | ({ /** The end-user `sub` approved the CIBA request. */ type: 'ciba.approved'; scope: string } & Subjects)
    | ({ /** The end-user `sub` denied the CIBA request. */ type: 'ciba.denied' } & Subjects)
    | ({ /** The approved CIBA request was redeemed at the token endpoint (once). */ type: 'ciba.redeemed' } & Subjects)
    | ({
        /**
         * The end-user could not be reached (the `ciba.notify` hook or `ciba.notifyUrl` failed), or
         * a ping (CIBA §10.2) did not reach the client's notification endpoint after every attempt.
         */
        type: 'ciba.notification_failed'
        target: 'user' | 'client'
        /** POSTs made (pings: 1 + retries). */
        attempts: number
        /** The last failure: an HTTP status, or a network failure's description. */
        error: string
      } & Subjects)
    | ({
        /** RFC 8693 token exchange: `clientId` exchanged a token of `sub` (grant `grantId`) for `jti`. */
        type: 'token.exchanged'
        /** Who acts (the new token's `act.sub`): the actor token's subject, else the exchanging client. */
        actor: string
        subjectTokenType: 'access_token' | 'id_token'
        scope: string
      } & Subjects)
    | ({
        /**
         * #45: `clientId` exchanged an ID token of `sub` (grant `grantId`) for an ID-JAG (`jti`) for
         * the authorization server `audience`.
         */
        type: 'identity_assertion.issued'
        audience: string
        scope: string
        resource?: string
      } & Subjects)
    | ({ type: 'code.redeemed' } & Subjects)
    | ({ type: 'code.replay_detected' } & Subjects)
    | ({ type: 'refresh_token.reuse_detected' } & Subjects)
    | ({ type: 'token.revoked'; tokenType: 'access_token' | 'refresh_token' } & Subjects)
    | ({
        /**
         * A grant was revoked (#42): every token of it is dead. `by` is who asked: the host's API or
         * CLI, the end-user on the grants page, or the client at the grant management endpoint.
         */
        type: 'grant.revoked'
        by: 'host' | 'user' | 'client'
        sub: string
        grantId: string
      } & Subjects)
    | ({ type: 'token.introspected'; active: boolean } & Subjects)
    | {
        type: 'client.authentication_failed'
        /** The client id the caller claimed (it may not exist). */
        clientId?: string
        /**
         * `invalid_assertion`: a private_key_jwt assertion was malformed, expired, for another
         * audience, or its signature did not verify; `keys_unavailable`: the client's keys could not
         * be had (its jwks_uri); `replayed`: the assertion's jti was used before; `method_not_allowed`:
         * the client registered another authentication method, or the profile refuses its method;
         * `secret_hash_unverifiable`: no live secret matched and one of the client's stored hashes
         * has more PBKDF2 iterations than this platform computes (`secretHashMaxIterations`).
         */
        reason: ClientAuthenticationFailure
      }
    | { type: 'signin.succeeded'; clientId: string; sub: string; sid?: string }
    | {
        type: 'signin.failed'
        clientId: string
        /** The username typed, only when it names a user (a mistyped one may be a password). */
        username?: string
        reason: 'invalid_credentials' | 'throttled'
      }
    | { type: 'session.ended'; sub: string; sid: string; clientId?: string }
    | {
        /**
         * A back-channel logout token (OpenID Connect Back-Channel Logout 1.0) reached the
         * client's `backchannelLogoutUri` (`delivered`: it answered 200 or 204), or every attempt
         * failed (`failed`).
         */
        type: 'logout.delivered' | 'logout.delivery_failed'
        clientId: string
        sub: string
        sid: string
        /** The logout token's `jti`. */
        jti: string
        /** POSTs made (1 + retries). */
        attempts: number
        /** The last HTTP status answered, if any. */
        status?: number
        /**
         * Why it failed: `status` (an answer other than 200/204), `timeout`, `network` (no answer),
         * `redirect` (redirects are not followed), `address_refused` (a self-registered client's
         * URI on a private or local address, or not https), `signing` (the token could not be made).
         */
        reason?: 'status' | 'timeout' | 'network' | 'redirect' | 'address_refused' | 'signing'
      }
    | { type: 'key.rotated'; kids: string[]; algorithms: string[] }
    | {
        /** A client registered itself (RFC 7591). */
        type: 'client.registered'
        clientId: string
        /** `none`, `client_secret_basic`, `client_secret_post` or `private_key_jwt`. */
        authMethod: string
        grantTypes: string[]
        scope: string
      }
    | { type: 'client.registration_updated' | 'client.registration_deleted'; clientId: string }
    | {
        /** A registration or RFC 7592 request was refused. */
        type: 'client.registration_failed'
        /** The client of an RFC 7592 request, when the path named one. */
        clientId?: string
        reason:
          | 'invalid_initial_access_token'
          | 'invalid_registration_access_token'
          | 'invalid_metadata'
          | 'too_many_registrations'
          | 'throttled'
      }
  )

/** The event types. */
export type GatehouseEventType = GatehouseEvent['type']

/** An event as the emitting code builds it: the base fields are added by the emitter. */
export type EventInput = GatehouseEvent extends infer E
  ? E extends EventBase
    ? Omit<E, keyof EventBase>
    : never
  : never

/** The host's hook. */
export type EventHook = (event: GatehouseEvent) => void | Promise<void>
