/**
 * #41 RAR: the consent page shows every authorization detail (RFC 9396) readable and escaped: its
 * type, the host's description, every field, nested objects and arrays, and no markup of the
 * client's text reaches the page.
 */
import { describe, expect, it } from 'vitest'
import { authorizationDetailItems, detailValue } from '../../../src/pages/authorization_details.ts'
import { consentPage } from '../../../src/pages/consent.ts'

const HOSTILE = {
  type: 'payment_initiation',
  actions: ['initiate'],
  locations: ['https://bank.example.com/<b>'],
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: '<script>alert("x")</script> & \u202eevil',
  '<img src=x onerror=alert(1)>': 'field name',
  nested: { list: [1, true, null, { deep: "it's" }], empty: [], none: {} },
}

describe('#41 RAR the consent page shows escaped authorization details', () => {
  it('#41 RAR every field is shown, nested objects and arrays as nested lists, text escaped and isolated', () => {
    const html = authorizationDetailItems([{ detail: HOSTILE }])
    expect(html).toContain('data-detail-type="payment_initiation"')
    expect(html).toContain('<strong><bdi>payment_initiation</bdi></strong>')
    // No markup of the client's text survives; each text is escaped.
    expect(html).not.toMatch(/<script|<img|<b>/)
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; \u202eevil')
    expect(html).toContain('<dt><bdi>&lt;img src=x onerror=alert(1)&gt;</bdi></dt>')
    expect(html).toContain('https://bank.example.com/&lt;b&gt;')
    // Common fields are labelled, with their member names.
    expect(html).toContain('Actions <code>actions</code>')
    expect(html).toContain('Where <code>locations</code>')
    // Nested: objects as definition lists, arrays as lists, scalars in JSON form.
    expect(html).toContain('<dt><bdi>currency</bdi></dt><dd><bdi>EUR</bdi></dd>')
    expect(html).toContain('<li><bdi>1</bdi></li><li><bdi>true</bdi></li><li><bdi>null</bdi></li>')
    expect(html).toContain('<dt><bdi>deep</bdi></dt><dd><bdi>it&#39;s</bdi></dd>')
    expect(html).toContain('<dt><bdi>empty</bdi></dt><dd><span class="empty">(none)</span></dd>')
    // The bidi override is isolated in a <bdi>, never left to run into the page's text.
    expect(detailValue('\u202eevil')).toBe('<bdi>\u202eevil</bdi>')
  })

  it('#41 RAR a host description titles the detail, escaped, with its type beside it', () => {
    const html = authorizationDetailItems([{ detail: { type: 'payment_initiation' }, description: 'Pay <b>45</b> €' }])
    expect(html).toContain('<strong><bdi>Pay &lt;b&gt;45&lt;/b&gt; €</bdi></strong> <code>payment_initiation</code>')
    expect(html).not.toContain('<dl>') // no fields but the type
  })

  it('#41 RAR consentPage lists the details with the scopes, inside the scope list Allow approves', async () => {
    const response = consentPage(
      {},
      {
        action: 'https://id.example/connect/interaction',
        uid: 'u1',
        csrf: 'c1',
        clientName: 'Payer',
        scopes: ['openid'],
        authorizationDetails: [{ detail: HOSTILE }, { detail: { type: 'account_information', actions: ['read'] } }],
      },
    )
    const html = await response.text()
    const list = /<ul class="scopes"[^>]*>([\s\S]*?)<\/ul>\n<form/.exec(html)?.[1] ?? ''
    expect(list).toContain('data-scope="openid"')
    expect(list).toContain('data-detail-type="payment_initiation"')
    expect(list).toContain('data-detail-type="account_information"')
    expect(html).not.toMatch(/<script>alert/)
  })

  it('#41 review: fields named like Object.prototype members (constructor, toString, __proto__) are fields, not labels: no throw', () => {
    const detail = JSON.parse(
      '{"type":"payment_initiation","constructor":"c","toString":"t","__proto__":{"x":1},"actions":["pay"]}',
    )
    const html = authorizationDetailItems([{ detail }])
    expect(html).toContain('<bdi>constructor</bdi>')
    expect(html).toContain('<bdi>toString</bdi>')
    expect(html).toContain('<bdi>t</bdi>')
  })
})
