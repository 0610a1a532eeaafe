/**
 * The test SPA: oidc-client-ts against Gatehouse on another origin. Authorization code + PKCE with
 * a public client, userinfo with a Bearer header (a CORS preflight), refresh via signinSilent (the
 * refresh token, no iframe), sign-out by signoutRedirect (id_token_hint, revoking the refresh token).
 * `window.SPA_CONFIG` comes from /config.js, written by the test's static server.
 */
const { authority, clientId } = window.SPA_CONFIG
const origin = window.location.origin
const manager = new window.oidc.UserManager({
  authority,
  client_id: clientId,
  redirect_uri: `${origin}/callback`,
  post_logout_redirect_uri: `${origin}/signed-out`,
  response_type: 'code',
  response_mode: 'query',
  scope: 'openid profile email',
  loadUserInfo: true,
  automaticSilentRenew: false,
  revokeTokensOnSignout: true,
  revokeTokenTypes: ['refresh_token'],
})

const $ = (id) => document.getElementById(id)
let refreshes = 0

function show(status, user, email) {
  $('status').textContent = status
  $('subject').textContent = user?.profile.sub ?? ''
  $('email').textContent = email ?? ''
  $('access-token').textContent = user ? `…${user.access_token.slice(-16)}` : ''
  $('refreshes').textContent = String(refreshes)
  $('sign-in').disabled = Boolean(user)
  $('refresh').disabled = !user
  $('sign-out').disabled = !user
}

/** Calls userinfo directly: the Authorization header makes the browser send a preflight first. */
async function userinfo(user) {
  const metadata = await manager.metadataService.getMetadata()
  const response = await fetch(metadata.userinfo_endpoint, {
    headers: { authorization: `Bearer ${user.access_token}` },
  })
  if (!response.ok) {
    throw new Error(`userinfo ${response.status}: ${response.headers.get('www-authenticate') ?? ''}`)
  }
  return (await response.json()).email
}

async function run(action) {
  $('error').textContent = ''
  try {
    await action()
  } catch (err) {
    $('error').textContent = `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`
    $('status').textContent = 'error'
  }
}

$('sign-in').addEventListener('click', () => run(() => manager.signinRedirect()))
$('refresh').addEventListener('click', () =>
  run(async () => {
    const user = await manager.signinSilent()
    refreshes++
    show('refreshed', user, await userinfo(user))
  }),
)
$('sign-out').addEventListener('click', () => run(() => manager.signoutRedirect()))

run(async () => {
  const path = window.location.pathname
  if (path === '/callback') {
    await manager.signinRedirectCallback()
    window.history.replaceState(null, '', '/')
  } else if (path === '/signed-out') {
    await manager.signoutRedirectCallback()
    show('signed out', null)
    return
  }
  const user = await manager.getUser()
  if (!user) return show('not signed in', null)
  show('signed in', user, await userinfo(user))
})
