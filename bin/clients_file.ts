/**
 * The in-memory mode of the client commands: the configuration file's `clients`, edited in place.
 * An edit splices the `clients` array and leaves every other byte of the file as it was; the result
 * is validated as the server would load it, then written atomically with the file's mode.
 */
import { chmod, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { secretId } from '../src/clients/index.ts'
import { type ConfigFile, parseConfigFile } from '../src/config/index.ts'
import { isSecretHash } from '../src/security/index.ts'
import { CliError } from './args.ts'
import { type Setup, requireFile } from './setup.ts'

export type Edit =
  | { op: 'add'; entry: Record<string, unknown> }
  | { op: 'remove'; index: number }
  | { op: 'replace'; index: number; entry: Record<string, unknown> }

/**
 * Where the top-level `clients` array and its elements are in a JSON text (already known to be
 * valid), so an edit can splice it and leave every other byte of the file as it was.
 */
function locateClients(text: string) {
  const ws = (i: number) => {
    while (i < text.length && ' \t\r\n'.includes(text[i] as string)) i++
    return i
  }
  const skip = (i: number): number => {
    const c = text[i]
    if (c === '"') {
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++
      return i + 1
    }
    if (c === '{' || c === '[') {
      let depth = 0
      for (; i < text.length; i++) {
        const d = text[i]
        if (d === '"') i = skip(i) - 1
        else if (d === '{' || d === '[') depth++
        else if ((d === '}' || d === ']') && --depth === 0) return i + 1
      }
      return i
    }
    while (i < text.length && !' \t\r\n,]}'.includes(text[i] as string)) i++
    return i
  }
  let array: [number, number] | undefined
  let lastValueEnd = -1
  let i = ws(0) + 1 // after `{`
  for (;;) {
    i = ws(i)
    if (text[i] === '}') break
    const keyEnd = skip(i)
    const key = JSON.parse(text.slice(i, keyEnd)) as string
    const valueStart = ws(ws(keyEnd) + 1) // after `:`
    const valueEnd = skip(valueStart)
    if (key === 'clients') array = [valueStart, valueEnd]
    lastValueEnd = valueEnd
    i = ws(valueEnd)
    if (text[i] === ',') i++
  }
  const elements: [number, number][] = []
  if (array && text[array[0]] === '[') {
    let j = array[0] + 1
    for (;;) {
      j = ws(j)
      if (text[j] === ']') break
      const end = skip(j)
      elements.push([j, end])
      j = ws(end)
      if (text[j] === ',') j++
    }
  }
  return { array, elements, lastValueEnd, objectStart: ws(0) }
}

/** The file's text after `edit`: a splice of the `clients` array, the rest byte for byte. */
function spliceClients(text: string, edit: Edit): string {
  const unit = /\n([ \t]+)"/.exec(text)?.[1] ?? '  '
  const { array, elements, lastValueEnd, objectStart } = locateClients(text)
  const firstElement = elements[0]
  const lineStart = firstElement ? text.lastIndexOf('\n', firstElement[0]) + 1 : 0
  const itemIndent =
    firstElement && /^[ \t]*$/.test(text.slice(lineStart, firstElement[0]))
      ? text.slice(lineStart, firstElement[0])
      : unit + unit
  const serialize = (entry: unknown) => JSON.stringify(entry, null, unit).replace(/\n/g, `\n${itemIndent}`)
  const replace = (from: number, to: number, by: string) => text.slice(0, from) + by + text.slice(to)
  switch (edit.op) {
    case 'add': {
      const item = serialize(edit.entry)
      const last = elements.at(-1)
      if (last) return replace(last[1], last[1], `,\n${itemIndent}${item}`)
      const list = `[\n${itemIndent}${item}\n${unit}]`
      if (array) return replace(array[0], array[1], list)
      if (lastValueEnd < 0) return replace(objectStart + 1, objectStart + 1, `\n${unit}"clients": ${list}\n`)
      return replace(lastValueEnd, lastValueEnd, `,\n${unit}"clients": ${list}`)
    }
    case 'remove': {
      const [start, end] = elements[edit.index] as [number, number]
      const previous = elements[edit.index - 1]
      const next = elements[edit.index + 1]
      if (previous) return replace(previous[1], end, '')
      if (next) return replace(start, next[0], '')
      return replace((array as [number, number])[0], (array as [number, number])[1], '[]')
    }
    case 'replace': {
      const [start, end] = elements[edit.index] as [number, number]
      return replace(start, end, serialize(edit.entry))
    }
  }
}

/** Applies `edit` to the file's `clients` (everything else kept as it was), validated, atomically. */
export async function editClients(setup: Setup, edit: Edit): Promise<void> {
  const { path, text } = requireFile(setup)
  const raw = JSON.parse(text) as Record<string, unknown>
  const expected = Array.isArray(raw.clients) ? [...(raw.clients as unknown[])] : []
  if (edit.op === 'add') expected.push(edit.entry)
  else if (edit.op === 'remove') expected.splice(edit.index, 1)
  else expected[edit.index] = edit.entry
  let next = spliceClients(text, edit)
  let check: unknown
  try {
    check = (JSON.parse(next) as Record<string, unknown>).clients
  } catch {
    check = undefined
  }
  if (JSON.stringify(check) !== JSON.stringify(expected)) {
    // Not expected with a valid file; rewrite the whole file rather than risk it.
    raw.clients = expected
    next = `${JSON.stringify(raw, null, 2)}\n`
  }
  try {
    parseConfigFile(next, path)
  } catch (err) {
    throw new CliError(`the change would make ${(err as Error).message}`, 1)
  }
  const target = await realpath(path)
  const mode = (await stat(target)).mode & 0o777
  const temp = `${target}.${process.pid}.tmp`
  try {
    await writeFile(temp, next, { mode })
    await chmod(temp, mode)
    await rename(temp, target)
  } catch (err) {
    await unlink(temp).catch(() => {})
    throw new CliError(`cannot write ${path}: ${(err as Error).message}`, 1)
  }
}

/** The index of the client in the file's `clients`, or a failure naming the file. */
export function fileClientIndex(setup: Setup, id: string): number {
  const { path, file } = requireFile(setup)
  const index = file.clients.findIndex((client) => client.clientId === id)
  if (index < 0) throw new CliError(`client "${id}" is not in ${path}`, 1)
  return index
}

/** A file entry in the shape of the host API's ClientInfo (no hashes, no plain-text secrets). */
export function fileClientInfo(client: ConfigFile['clients'][number]) {
  const secret = client.clientSecret
  return {
    clientId: client.clientId,
    displayName: client.displayName ?? client.clientId,
    type: secret === undefined && client.tokenEndpointAuthMethod !== 'private_key_jwt' ? 'public' : 'confidential',
    permissions: client.permissions,
    redirectUris: client.redirectUris,
    postLogoutRedirectUris: client.postLogoutRedirectUris,
    ...(client.allowedNetworks ? { allowedNetworks: client.allowedNetworks } : {}),
    ...(client.tokenEndpointAuthMethod ? { tokenEndpointAuthMethod: client.tokenEndpointAuthMethod } : {}),
    ...(client.jwksUri ? { jwksUri: client.jwksUri } : {}),
    ...(client.jwks ? { jwks: client.jwks } : {}),
    ...(client.requirePushedAuthorizationRequests ? { requirePushedAuthorizationRequests: true } : {}),
    ...(client.requireDpop ? { requireDpop: true } : {}),
    ...(client.idTokenSignedResponseAlg ? { idTokenSignedResponseAlg: client.idTokenSignedResponseAlg } : {}),
    ...(client.backchannelLogoutUri ? { backchannelLogoutUri: client.backchannelLogoutUri } : {}),
    ...(client.backchannelLogoutSessionRequired ? { backchannelLogoutSessionRequired: true } : {}),
    ...(client.authorizationDetailsTypes ? { authorizationDetailsTypes: client.authorizationDetailsTypes } : {}),
    secrets:
      secret === undefined
        ? []
        : isSecretHash(secret)
          ? [{ id: secretId({ hash: secret, createdAt: 0 }) }]
          : [{ plainText: true }],
  }
}
