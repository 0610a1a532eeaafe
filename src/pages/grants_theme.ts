/**
 * @module pages/grants_theme
 * The texts and style rules of the end-user's grants page (#42 item 3), which the layout merges
 * into `DEFAULT_TEXTS` (so `theme.texts` overrides them) and into its style sheet.
 */

/** The grants page's texts; `{client}` is the client's name, `{resource}` a resource URI (both isolated). */
export const GRANTS_TEXTS = {
  grantsTitle: 'Apps and agents with access to your account',
  grantsIntro: 'Each may act for you as listed until you revoke its access.',
  grantsEmpty: 'No app or agent has access to your account.',
  grantsRevokedNotice: 'Access revoked. That app or agent can no longer act for you.',
  grantsSelfRegistered: 'Registered itself',
  grantsClientGone: 'No longer registered',
  grantsMay: 'It may:',
  grantsResource: 'Use this access at {resource}',
  grantsClaim: 'See your',
  grantsGranted: 'Granted',
  grantsLastUsed: 'Last used',
  grantsNotUsed: 'Not since it was granted',
  grantsHow: 'Given through',
  grantsKindCode: 'Signing in',
  grantsKindDevice: 'Signing in on a device',
  grantsKindCiba: 'A request you approved (CIBA)',
  grantsKindIdentityAssertion: "Your organization's single sign-on",
  revokeButton: 'Revoke',
  revokeTitle: 'Revoke access?',
  revokeQuestion:
    'Revoke access for {client}? It will be signed out of your account: its tokens stop working now, and it cannot act for you again unless you allow it again.',
  revokeConfirmButton: 'Revoke access',
  grantGoneTitle: 'No longer there',
  grantGoneMessage: 'This access is no longer there: it was revoked or it has ended.',
  grantsBack: 'Back to your apps and agents',
  grantsSignInTitle: 'Sign in first',
  grantsSignInMessage: 'Sign in to see the apps and agents with access to your account, then open this page again.',
} as const

/** The grants page's rules (the list card is wider than the forms). */
export const GRANTS_CSS =
  'main:has(ul.grants,p.grants-empty){max-width:40rem}' +
  'ul.grants{list-style:none;padding:0;margin:0;display:flex;flex-direction:column;gap:1rem}' +
  'li.grant{border:1px solid color-mix(in srgb,var(--border) 50%,transparent);border-radius:12px;padding:1rem 1.1rem 1.1rem}' +
  '.grant-head{display:flex;flex-wrap:wrap;align-items:center;gap:.3rem .6rem;margin:0 0 .75rem}' +
  '.grant-head h2{margin:0;font-size:1.1rem}.grant-host{color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}' +
  '.badge{font-size:.75rem;font-weight:600;line-height:1.4;padding:.05rem .55rem;border-radius:999px;border:1px solid var(--error-border);color:var(--error);background:var(--error-bg)}' +
  '.grant p.may{margin:0 0 .4rem;font-size:.9rem}' +
  'dl.facts{display:grid;grid-template-columns:auto 1fr;gap:.15rem .9rem;margin:.75rem 0 0;font-size:.9rem}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}' +
  '.grant form{display:flex;justify-content:flex-end;margin-top:.5rem}.grant form button{width:auto;min-height:2.5rem;padding:.45rem 1.25rem}' +
  'button.danger{background:transparent;color:var(--error);border:1px solid var(--error-border)}button.danger:hover{background:var(--error-bg)}' +
  'button.destructive{background:var(--error);color:var(--card);border:1px solid var(--error)}button.destructive:hover{filter:brightness(.93)}' +
  '.done{display:flex;gap:.6rem;align-items:flex-start;border:1px solid color-mix(in srgb,var(--primary) 45%,transparent);background:color-mix(in srgb,var(--primary) 8%,var(--card));color:var(--text);border-radius:10px;padding:.75rem .85rem;margin:1rem 0 1.25rem}' +
  '.done svg{flex:none;width:1.25rem;height:1.25rem;margin-top:.1rem;color:var(--primary)}' +
  'a.button{display:flex;align-items:center;justify-content:center;font-weight:600;min-height:2.875rem;padding:.7rem 1rem;border-radius:10px;text-decoration:none}' +
  'a.button.primary{background:var(--primary);color:var(--on-primary)}a.button.secondary{color:var(--text);border:1px solid var(--border)}' +
  '.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}'
