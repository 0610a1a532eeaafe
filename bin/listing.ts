/**
 * The tables the client and key commands print: public metadata only (secret ids and expiry,
 * key ids and lifetimes), never a secret or a private key.
 */
import type { GrantView, KeyInfo } from '../src/index.ts'
import { iso, nowSeconds, table } from './io.ts'

/** A client's secret as listed: its id and expiry, or a plain-text secret of the file. */
export type SecretCell = { id?: string; expiresAt?: number; plainText?: boolean }

export function secretsCell(secrets: SecretCell[]): string {
  if (secrets.length === 0) return '-'
  const now = nowSeconds()
  const expiry = (at: number) => ` (${at <= now ? 'expired' : 'expires'} ${iso(at)})`
  return secrets
    .map((s) =>
      s.plainText ? '(plain text in the file)' : `${s.id}${s.expiresAt !== undefined ? expiry(s.expiresAt) : ''}`,
    )
    .join(', ')
}

function keyState(key: KeyInfo, now: number): string {
  if (key.expiresAt !== undefined && key.expiresAt <= now) return 'expired'
  if (key.retiresAt !== undefined && key.retiresAt <= now) return 'retired'
  if (key.activatesAt > now) return 'next'
  return 'signing'
}

export function keyTable(keys: KeyInfo[]): string {
  const now = nowSeconds()
  return table(
    ['KID', 'ALG', 'STATE', 'SIGNS FROM', 'RETIRES', 'UNPUBLISHED'],
    keys.map((key) => [
      key.kid,
      key.alg,
      keyState(key, now),
      iso(key.activatesAt),
      key.retiresAt !== undefined ? iso(key.retiresAt) : '-',
      key.expiresAt !== undefined ? iso(key.expiresAt) : '-',
    ]),
  )
}

/** The grants as `grants list` prints them: what each client may do, never a token. */
export function grantTable(grants: GrantView[]): string {
  return table(
    ['ID', 'CLIENT', 'SCOPES', 'RESOURCES', 'DETAILS', 'KIND', 'GRANTED', 'LAST USED'],
    grants.map((grant) => [
      grant.id,
      grant.client.deleted ? `${grant.client.id} (deleted)` : grant.client.id,
      grant.scopes.join(' ') || '-',
      grant.resources.join(' ') || '-',
      grant.authorizationDetails?.map((detail) => detail.type).join(' ') || '-',
      grant.kind,
      iso(grant.createdAt),
      grant.lastUsedAt !== undefined ? iso(grant.lastUsedAt) : '-',
    ]),
  )
}
