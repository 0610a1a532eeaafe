/**
 * #42 item 3: the grants page's HTML: each grant with its client (name and host isolated, the
 * self-registered and deleted markers), what it may do in the consent page's words (scopes,
 * authorization details, claims, resources), when it was granted and last used and how; the
 * empty state; every value of a client escaped; themed texts.
 */
import { describe, expect, it } from 'vitest'
import { type GrantEntry, grantsListPage, revokeConfirmPage } from '../../../src/pages/index.ts'

const GRANT: GrantEntry = {
  id: 'grant-1',
  client: { id: 'agent', name: 'Agent <b>\u202eevil', host: 'agent.example\u202e.org', selfRegistered: true },
  scopes: ['openid', 'email', 'mcp:tools'],
  resources: ['https://mcp.example.com/mcp'],
  claims: ['name'],
  authorizationDetails: [{ detail: { type: 'payment_initiation', actions: ['initiate'] }, description: 'Pay 10 EUR' }],
  kind: 'device_code',
  createdAt: Date.UTC(2026, 10, 1) / 1000,
  lastUsedAt: Date.UTC(2026, 10, 27, 9, 30) / 1000,
}

async function html(response: Response): Promise<string> {
  return response.text()
}

describe('#42 item 3 the grants page HTML', () => {
  it('#42 item 3: one entry per grant: client isolated and marked, permissions in words, dates, kind, a Revoke form', async () => {
    const page = await html(
      grantsListPage({}, { action: 'https://id.example/account/apps', csrf: 'c', grants: [GRANT] }),
    )
    expect(page).toContain('<h2 id="grant-0"><bdi>Agent &lt;b&gt;\u202eevil</bdi></h2>')
    expect(page).toContain('<span class="grant-host"><bdi>agent.example\u202e.org</bdi></span>')
    expect(page).toContain('<span class="badge">Registered itself</span>')
    expect(page).toContain('Know who you are <code>openid</code>')
    expect(page).toContain('Use mcp:tools')
    expect(page).toContain('<strong><bdi>Pay 10 EUR</bdi></strong> <code>payment_initiation</code>')
    expect(page).toContain('See your <code>name</code>')
    expect(page).toContain('Use this access at <strong><bdi>https://mcp.example.com/mcp</bdi></strong>')
    expect(page).toContain('<time datetime="2026-11-01T00:00:00.000Z">Nov 1, 2026</time>')
    // ICU writes a narrow no-break space before AM in newer versions.
    expect(page).toMatch(/<time datetime="2026-11-27T09:30:00.000Z">Nov 27, 2026, 9:30\sAM UTC<\/time>/)
    expect(page).toContain('<dd>Signing in on a device</dd>')
    expect(page).toContain('<input type="hidden" name="grant_id" value="grant-1">')
    expect(page).not.toContain('<b>')
  })

  it('#42 item 3: the empty state, the revoked notice, a deleted client and CIBA', async () => {
    expect(await html(grantsListPage({}, { action: '/x', csrf: 'c', grants: [] }))).toContain(
      'No app or agent has access to your account.',
    )
    const gone: GrantEntry = {
      ...GRANT,
      client: { id: 'x', name: 'x', selfRegistered: false, deleted: true },
      kind: 'ciba',
    }
    const page = await html(grantsListPage({}, { action: '/x', csrf: 'c', grants: [gone], revoked: true }))
    expect(page).toContain('role="status"')
    expect(page).toContain('<span class="badge">No longer registered</span>')
    expect(page).toContain('<dd>A request you approved (CIBA)</dd>')
  })

  it('#42 item 3: the texts follow the theme; the confirmation names the client isolated', async () => {
    const theme = {
      lang: 'de',
      texts: { grantsTitle: 'Apps mit Zugriff', revokeQuestion: 'Zugriff für {client} entziehen?' },
    }
    const page = await html(grantsListPage(theme, { action: '/x', csrf: 'c', grants: [GRANT] }))
    expect(page).toContain('<h1>Apps mit Zugriff</h1>')
    expect(page).toContain('01.11.2026')
    const confirm = await html(revokeConfirmPage(theme, { action: '/x', csrf: 'c', grant: GRANT }))
    expect(confirm).toContain('Zugriff für <strong><bdi>Agent &lt;b&gt;\u202eevil</bdi></strong> entziehen?')
  })
})
