/**
 * @module pages/theme
 * The `theme` option's type: the look and words of the built-in pages (its schema is
 * `ThemeSchema` in src/pages/layout.ts).
 */

/** Look and words of the built-in pages. */
export interface Theme {
  productName?: string
  logoUrl?: string
  primaryColor?: string
  primaryTextColor?: string
  backgroundColor?: string
  colorScheme?: 'auto' | 'light' | 'dark'
  lang?: string
  dir?: 'auto' | 'ltr' | 'rtl'
  texts?: {
    signInTitle?: string
    signInSubtitle?: string
    usernameLabel?: string
    passwordLabel?: string
    signInButton?: string
    cancelButton?: string
    consentTitle?: string
    consentIntro?: string
    selfRegisteredNotice?: string
    metadataDocumentNotice?: string
    allowButton?: string
    denyButton?: string
    signOutTitle?: string
    signOutQuestion?: string
    signOutButton?: string
    staySignedInButton?: string
    /** Logout confirmation before a self-registered client's post-logout redirect; `{client}`, `{host}`. */
    logoutRedirectNotice?: string
    /** The same without a session (the page only offers to continue); `{client}`, `{host}`. */
    signedOutRedirectNotice?: string
    continueButton?: string
    signedOutTitle?: string
    signedOutMessage?: string
    errorTitle?: string
    errorHint?: string
    notFoundTitle?: string
    notFoundMessage?: string
    /** The device verification page (RFC 8628 §3.3): the user-code form. */
    verifyTitle?: string
    verifyIntro?: string
    userCodeLabel?: string
    verifyButton?: string
    userCodeInvalid?: string
    userCodeMalformed?: string
    /** `{minutes}`: when the next code may be tried. */
    userCodeThrottled?: string
    userCodeUsed?: string
    userCodeExpired?: string
    /** The device confirmation page; `{client}` in the intro and notices, `{document}` too. */
    deviceTitle?: string
    deviceIntro?: string
    deviceCodeCheck?: string
    deviceSelfRegisteredNotice?: string
    /** The CIBA approval page (OpenID CIBA); `{client}` in the intro. */
    cibaTitle?: string
    cibaIntro?: string
    cibaBindingCheck?: string
    cibaWrongUser?: string
    /** Shown above the intro for a client that registered itself; `{client}`, `{document}`. */
    cibaSelfRegisteredNotice?: string
    cibaMetadataDocumentNotice?: string
    cibaApprovedTitle?: string
    cibaApprovedMessage?: string
    cibaDeniedTitle?: string
    cibaDeniedMessage?: string
    deviceMetadataDocumentNotice?: string
    approveButton?: string
    deviceApprovedTitle?: string
    deviceApprovedMessage?: string
    deviceDeniedTitle?: string
    deviceDeniedMessage?: string
    /** The end-user's grants page (#42): `{client}` in `revokeQuestion`, `{resource}` in `grantsResource`. */
    grantsTitle?: string
    grantsIntro?: string
    grantsEmpty?: string
    grantsRevokedNotice?: string
    grantsSelfRegistered?: string
    grantsClientGone?: string
    grantsMay?: string
    grantsResource?: string
    grantsClaim?: string
    grantsGranted?: string
    grantsLastUsed?: string
    grantsNotUsed?: string
    grantsHow?: string
    grantsKindCode?: string
    grantsKindDevice?: string
    grantsKindCiba?: string
    /** A grant made with an identity provider's assertion (#45, the jwt-bearer grant with an ID-JAG). */
    grantsKindIdentityAssertion?: string
    revokeButton?: string
    revokeTitle?: string
    revokeQuestion?: string
    revokeConfirmButton?: string
    grantGoneTitle?: string
    grantGoneMessage?: string
    grantsBack?: string
    grantsSignInTitle?: string
    grantsSignInMessage?: string
  }
}
