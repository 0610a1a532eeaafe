/**
 * #40 item 6: the error messages docs/configuration.md quotes for a bad configuration file are the
 * ones the file's parser gives (the quoted `gt:` message listed four grant types; there are five).
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseConfigFile } from '../../src/config/file.ts'

const text = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8')

/** The message the page quotes (in double backticks) that starts with `start`. */
function quoted(start: string): string {
  const flat = text.replace(/\n/g, ' ')
  const from = flat.indexOf(`\`\`${start}`)
  if (from < 0) throw new Error(`docs/configuration.md quotes no message starting ${start}`)
  return flat.slice(from + 2, flat.indexOf('``', from + 2))
}

/** The one line the parser gives for a file. */
function message(file: Record<string, unknown>): string {
  try {
    parseConfigFile(JSON.stringify(file), 'gatehouse.json')
  } catch (err) {
    return (err as Error).message.split('\n')[1] as string
  }
  throw new Error('the file parsed')
}

describe('#40 item 6: docs/configuration.md quotes the parser', () => {
  it('#40 item 6: the unknown grant type permission message lists every gt: permission', () => {
    expect(quoted('clients.0.permissions.1: unknown permission')).toBe(
      message({ clients: [{ clientId: 'web', permissions: ['ept:token', 'gt:client_credential'] }] }),
    )
  })

  it('#40 item 6: the unknown key message (a misspelt top-level key, with the suggestion)', () => {
    expect(quoted('acessTokenTtl: unknown key')).toBe(message({ acessTokenTtl: 60 }))
  })
})
