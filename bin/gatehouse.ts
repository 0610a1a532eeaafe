/**
 * `npx gatehouse`: the operator's command line (bin/cli.ts runs it).
 *
 * `serve` is `npm start` (bin/serve_node.ts, same flags and environment). `clients ...` and
 * `keys ...` work on the store `npm start` would use (bin/store.ts) through the host API of
 * `createTokenService`. With the in-memory store there is nothing outside a running server to
 * change: the client commands edit the configuration file's `clients` instead, and the key
 * commands fail.
 *
 * Each command is a module of bin/commands/, one definition (bin/args.ts) from which its flags
 * are parsed and its help is written; this file dispatches to them.
 *
 * Results (tables, JSON, a secret just generated) go to stdout; progress and errors to stderr.
 * Exit status: 0 done, 1 failed, 2 bad command line. Stored secrets are never printed.
 */
import { readFile } from 'node:fs/promises'
import { CliError, type Command } from './args.ts'
import { clientsAdd } from './commands/clients_add.ts'
import { clientsList } from './commands/clients_list.ts'
import { clientsRemove } from './commands/clients_remove.ts'
import { clientsRotateSecret } from './commands/clients_rotate_secret.ts'
import { grantsList } from './commands/grants_list.ts'
import { grantsRevoke, grantsRevokeAll } from './commands/grants_revoke.ts'
import { keysList } from './commands/keys_list.ts'
import { keysRotate } from './commands/keys_rotate.ts'
import { migrate } from './commands/migrate.ts'
import { serve } from './commands/serve.ts'
import { out, progress, redact } from './io.ts'

const COMMANDS: Command[] = [
  serve,
  migrate,
  clientsAdd,
  clientsList,
  clientsRemove,
  clientsRotateSecret,
  grantsList,
  grantsRevoke,
  grantsRevokeAll,
  keysList,
  keysRotate,
]
const GROUPS = ['clients', 'grants', 'keys']

/** Commands and their summaries in two columns, `gap` spaces after the widest. */
function commandList(rows: [string, string][], gap: number): string {
  const width = Math.max(...rows.map(([name]) => name.length)) + gap
  return rows.map(([name, summary]) => `  ${name.padEnd(width)}${summary}`).join('\n')
}

function synopsis(command: Command): string {
  return [command.name, ...command.positionals].join(' ')
}

const STORE_NOTE = `The store is chosen as by npm start: GATEHOUSE_STORE (memory, postgres, redis, pglite, sqlite),
else DATABASE_URL (PostgreSQL, schema GATEHOUSE_PG_SCHEMA), else REDIS_CLUSTER_NODES, REDIS_SENTINELS (with
REDIS_SENTINEL_NAME) or REDIS_URL (Redis, prefix GATEHOUSE_REDIS_PREFIX),
else the configuration file's "store", else memory. GATEHOUSE_STORE=pglite uses GATEHOUSE_DATA_DIR;
GATEHOUSE_STORE=sqlite the file gatehouse.db in it (Node >= 22.5, Bun or Deno; commits synced as
GATEHOUSE_SQLITE_SYNCHRONOUS says: full, the default, or normal).`

const USAGE = `Usage: gatehouse <command> [options]

Commands:
${commandList(
  [
    ...COMMANDS.map((command): [string, string] => [synopsis(command), command.summary]),
    ['help [COMMAND]', 'help for a command (or: gatehouse COMMAND --help)'],
  ],
  4,
)}

${STORE_NOTE}
With the in-memory store, "clients add|remove|rotate-secret" edit the configuration file's "clients"
(restart the server to load them) and "keys" and "grants" commands fail: in-memory keys and grants live in
the server process.

Every command takes --config FILE (default $GATEHOUSE_CONFIG) and --help.
Results go to stdout, progress and errors to stderr. Exit status: 0 done, 1 failed, 2 bad command line.`

function groupUsage(group: string): string {
  const commands = COMMANDS.filter((command) => command.name.startsWith(`${group} `))
  const list = commandList(
    commands.map((command) => [synopsis(command), command.summary]),
    2,
  )
  return `Usage: gatehouse ${group} <command> [options]\n\nCommands:\n${list}\n\nRun "gatehouse ${group} <command> --help" for a command's options.`
}

/** The command named by the leading words of `words`, and how many words named it. */
function lookup(words: string[], usage: string): { command: Command; used: number } | { group: string } {
  const [first, second] = words
  if (first === undefined) throw new CliError('no command given', 2, usage)
  if (GROUPS.includes(first)) {
    if (second === undefined || second.startsWith('-')) return { group: first }
    const command = COMMANDS.find((candidate) => candidate.name === `${first} ${second}`)
    if (!command) throw new CliError(`unknown command "${first} ${second}"`, 2, groupUsage(first))
    return { command, used: 2 }
  }
  const command = COMMANDS.find((candidate) => candidate.name === first)
  if (!command) {
    throw new CliError(
      first.startsWith('-') ? `unknown option ${first.split('=')[0]}` : `unknown command "${first}"`,
      2,
      usage,
    )
  }
  return { command, used: 1 }
}

/** The package's version: its package.json is one folder up from the sources, two from dist/bin. */
async function version(): Promise<string> {
  for (const path of ['../package.json', '../../package.json']) {
    const text = await readFile(new URL(path, import.meta.url), 'utf8').catch(() => undefined)
    const manifest = text === undefined ? undefined : (JSON.parse(text) as { name?: string; version: string })
    if (manifest?.name === 'gatehouse-oidc') return manifest.version
  }
  throw new Error('cannot find the package.json of gatehouse-oidc')
}

/** `gatehouse help [COMMAND]`: the help of a command or group, or the usage. */
function help(words: string[]): number {
  if (words.length === 0) {
    out(USAGE)
    return 0
  }
  const found = lookup(words, USAGE)
  if ('group' in found) {
    if (words.length > 1) throw new CliError(`unknown command "${words.join(' ')}"`, 2, groupUsage(found.group))
    out(groupUsage(found.group))
  } else {
    if (words.length > found.used) throw new CliError(`unknown command "${words.join(' ')}"`, 2, USAGE)
    out(found.command.help)
  }
  return 0
}

/** Runs the command line; resolves with the exit status, or undefined while a server runs. */
export async function main(argv: string[]): Promise<number | undefined> {
  const [first] = argv
  if (first === undefined) {
    progress(USAGE)
    return 2
  }
  if (first === '--help' || first === '-h') {
    out(USAGE)
    return 0
  }
  if (first === '--version') {
    out(await version())
    return 0
  }
  if (first === 'help') return help(argv.slice(1))
  const found = lookup(argv, USAGE)
  if ('group' in found) {
    const rest = argv.slice(1)
    if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) {
      out(groupUsage(found.group))
      return 0
    }
    throw new CliError(
      rest.length === 0 ? `"${found.group}" needs a command` : `unknown option ${rest[0]}`,
      2,
      groupUsage(found.group),
    )
  }
  return found.command.execute(argv.slice(found.used))
}

/** main, with errors reported on stderr (no stack) and the process ended with its status. */
export async function run(argv: string[]): Promise<void> {
  let status: number | undefined
  try {
    status = await main(argv)
  } catch (err) {
    if (err instanceof CliError) {
      progress(`gatehouse: ${redact(err.message)}`)
      if (err.status === 2 && err.usage) progress(`\n${err.usage}`)
      status = err.status
    } else {
      progress(`gatehouse: ${redact(err instanceof Error ? err.message : String(err))}`)
      if (process.env.GATEHOUSE_DEBUG && err instanceof Error && err.stack) progress(redact(err.stack))
      status = 1
    }
  }
  if (status === undefined) return
  process.exitCode = status
  // Everything is closed; a driver's stray timer must not hold the process.
  setTimeout(() => process.exit(status), 300).unref()
}
