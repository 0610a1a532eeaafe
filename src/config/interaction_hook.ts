/**
 * @module config/interaction_hook
 * How a host application plugs in its own sign-in: a hook that sees the pending authorization
 * request and answers with the signed-in account or a Response (e.g. a redirect to its login page),
 * and `service.interactions.complete(uid, result)` to resume once the host's login is done.
 */

/** The authentication the host vouches for. */
export interface LoginResult {
  /** The end-user's subject identifier (≤ 255 ASCII characters, never reassigned). */
  sub: string
  /** When the end-user authenticated (epoch s); default now. */
  authTime?: number
  /** Authentication context class reference. */
  acr?: string
  /** Authentication methods references (e.g. `pwd`, `mfa`). */
  amr?: string[]
}

/** What the host decides about a pending authorization request. */
export type InteractionResult =
  | {
      login: LoginResult
      /**
       * The scopes the end-user approved. The code and its tokens get exactly these (those of the
       * request; identity scopes such as `openid` and `email` only when listed); an empty list is
       * `access_denied`. Default: every requested scope (the host asked no consent).
       */
      consent?: {
        scopes?: string[]
        /**
         * The claims requested with the `claims` parameter (OpenID Connect Core §5.5, see
         * `PendingInteraction.claims`) the end-user approved beyond those of the approved scopes.
         * Default with a `consent`: none; without a `consent`: all of them.
         */
        claims?: string[]
      }
    }
  | {
      /** The request fails and the client is told so. */
      error: 'access_denied' | 'login_required' | 'consent_required' | 'interaction_required'
      description?: string
    }

/**
 * A pending authorization request, as the host's hook and login page see it: a browser's
 * authorization request (`kind: 'authorization'`) or the sign-in of a device authorization
 * (`kind: 'device'`, RFC 8628 §3.3).
 */
export interface PendingInteraction {
  /** Interaction id: pass it to `service.interactions.complete`. */
  uid: string
  /**
   * `device`: the end-user entered a device's user code at the verification page
   * (`/connect/verify`) and is to sign in for it. The hook only signs the end-user in: the
   * built-in confirmation page always follows (naming the client and scopes, with Approve and
   * Deny), so a `consent` in the result is ignored; an `error` denies the device.
   */
  kind: 'authorization' | 'device' | 'ciba'
  /** Set for `kind: 'device'`: the user code the end-user entered, as shown (`BCDF-GHJK`). */
  device?: { userCode: string }
  /**
   * Set for `kind: 'ciba'` (OpenID CIBA, the approval page): the end-user the request names (only
   * they may decide; `loginHint` is their `sub`) and its binding message. As for a device, the hook
   * only signs the end-user in: the built-in confirmation follows; an `error` denies the request.
   */
  ciba?: { sub: string; bindingMessage?: string }
  /** Why the user is needed: to sign in, or (signed in) to consent. Always `login` for a device. */
  prompt: 'login' | 'consent'
  clientId: string
  clientName: string
  scopes: string[]
  /** `prompt` values of the request. */
  requestedPrompt: string[]
  /** Core §3.1.2.1 `login_hint`: prefill the sign-in form's username with it. */
  loginHint?: string
  maxAge?: number
  /** Core §3.1.2.1 `ui_locales`, as sent (space-separated BCP47 tags, preferred first). */
  uiLocales?: string
  /** Core §3.1.2.1 `claims_locales`, as sent (space-separated BCP47 tags). */
  claimsLocales?: string
  /** Core §3.1.2.1 `display`: how the sign-in should be shown. */
  display?: 'page' | 'popup' | 'touch' | 'wap'
  /** Core §3.1.2.1 `acr_values`, in order of preference: a `login.acr` from these is expected. */
  acrValues?: string[]
  /**
   * The claims request (Core §5.5): claim names asked for at userinfo and in the ID token, without
   * the claims of scopes the client may not request (§5.4: those are dropped). Those no approved
   * scope releases need the end-user's consent (`consent.claims`); the host's `findAccount` must
   * return them for them to be released.
   */
  claims?: { userinfo: string[]; idToken: string[] }
  /**
   * The request's authorization details (RFC 9396), each `{ type, ...fields }`: a consent given
   * (`consent`) approves all of them, so show every one. Without a consent, the built-in consent
   * page asks unless the session approved the same details before.
   */
  authorizationDetails?: Array<{ type: string; [field: string]: unknown }>
  /** The current signed-in end-user, if any (e.g. when re-authentication is forced). */
  session?: { sub: string; authTime: number }
  /**
   * Set when the client registered itself (dynamic registration, or a client id metadata
   * document): the consent screen should say so and name the host the browser returns to. A
   * result without `consent` for such a client continues on the built-in consent page. Not set
   * for a device (no browser returns to it): its confirmation page shows the notice.
   */
  selfRegistered?: {
    kind: 'dynamic' | 'metadata_document'
    /** Host (or private-use scheme) of the redirect URI. */
    redirectHost: string
    /** Host of the metadata document (metadata-document clients). */
    documentHost?: string
  }
  /** Epoch seconds after which the interaction can no longer complete. */
  expiresAt: number
}

/**
 * The host's sign-in hook. Return `{ login }` when the request is already authenticated (e.g. by
 * the host's own session cookie), or a `Response` that sends the browser to the host's login page;
 * that page later calls `service.interactions.complete(uid, result)` and returns its Response.
 */
export type InteractionHook = (
  request: Request,
  interaction: PendingInteraction,
) => Promise<Response | InteractionResult> | Response | InteractionResult
