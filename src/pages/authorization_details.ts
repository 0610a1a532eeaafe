/**
 * @module pages/authorization_details
 * Authorization details (RFC 9396) as the end-user reads them before approving: each detail's type,
 * the host's one-line description if it gave one, and every field, nested objects and arrays as
 * nested lists. All text is escaped (`escapeHtml`) and bidi-isolated (`<bdi>`): a detail is the
 * client's words, shown on a page of the service. The consent page (and the CIBA approval page)
 * use it.
 */
import { escapeHtml as e } from '../http.ts'
import { CHECK_ICON } from './layout.ts'

/** A detail as the page shows it: the detail itself and the host's description of it, if any. */
export interface DetailView {
  detail: { type: string; [field: string]: unknown }
  /** Plain text from the host's `describe` hook. */
  description?: string
}

/** Field names shown with words instead of the RFC's member names (§2.2). */
const FIELD_LABELS: Record<string, string> = {
  locations: 'Where',
  actions: 'Actions',
  datatypes: 'Data',
  identifier: 'Identifier',
  privileges: 'Privileges',
}

/** A JSON scalar as text: strings as they are, the others in their JSON form. */
function scalarText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null')
}

/** The HTML of a JSON value: a scalar inline; arrays and objects as nested lists. */
export function detailValue(value: unknown): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '<span class="empty">(none)</span>'
    return `<ul>${value.map((item) => `<li>${detailValue(item)}</li>`).join('')}</ul>`
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
    if (entries.length === 0) return '<span class="empty">(none)</span>'
    return `<dl>${entries.map(([name, member]) => `<dt><bdi>${e(name)}</bdi></dt><dd>${detailValue(member)}</dd>`).join('')}</dl>`
  }
  return `<bdi>${e(scalarText(value))}</bdi>`
}

/** The fields of one detail (its `type` aside), labelled. */
function detailFields(detail: DetailView['detail']): string {
  const fields = Object.entries(detail).filter(([name]) => name !== 'type')
  if (fields.length === 0) return ''
  const rows = fields.map(([name, value]) => {
    // Own labels only: a field named `constructor` or `toString` is a field, not a label (#41 review).
    const known = Object.hasOwn(FIELD_LABELS, name) ? FIELD_LABELS[name] : undefined
    const label = known === undefined ? `<bdi>${e(name)}</bdi>` : `${e(known)} <code>${e(name)}</code>`
    return `<dt>${label}</dt><dd>${detailValue(value)}</dd>`
  })
  return `<dl>${rows.join('')}</dl>`
}

/** The list items of `details`, each with its type, description and fields. */
export function authorizationDetailItems(details: readonly DetailView[]): string {
  return details
    .map(({ detail, description }) => {
      const heading = `<strong><bdi>${e(description ?? detail.type)}</bdi></strong>${description === undefined ? '' : ` <code>${e(detail.type)}</code>`}`
      return `<li class="detail" data-detail-type="${e(detail.type)}">${CHECK_ICON}<div>${heading}${detailFields(detail)}</div></li>`
    })
    .join('')
}
