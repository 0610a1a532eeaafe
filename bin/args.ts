/**
 * The command line's one definition per command: its name, summary, positionals and flags (type,
 * value name, description, default, allowed values) make both node:util parseArgs' options and the
 * usage and `--help` text, so the two cannot drift apart. The checks every command shares run here
 * too: positionals, required, conflicting and allowed flag values, each a status 2 with the usage.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { out, readStdin } from './io.ts'

/** A failure to report without a stack: status 1 (could not be done) or 2 (bad command line). */
export class CliError extends Error {
  readonly status: 1 | 2
  readonly usage: string | undefined

  constructor(message: string, status: 1 | 2, usage?: string) {
    super(message)
    this.status = status
    this.usage = usage
  }
}

/** One flag of a command: how it parses and how its help reads. */
export interface Flag {
  type: 'string' | 'boolean'
  /** The value's name in usage and help (`--grace SECONDS`); default: the flag's name in capitals. */
  value?: string
  short?: string
  /** Repeatable: the values in order (none: `[]`). Help says "repeatable". */
  multiple?: boolean
  /** Help says "required"; missing, it is a command-line error. */
  required?: boolean
  /** The value when the flag is not given. Help says "default …". */
  default?: string
  /** The only values allowed, listed in the help. */
  choices?: readonly string[]
  /** A flag that cannot be given with this one: usage shows `[--this V | --that]`. */
  conflicts?: string
  /** The help text; a `\n` starts a line of its own, aligned under the first. */
  description: string
}

export type Flags = Readonly<Record<string, Flag>>

type FlagValue<F extends Flag> = F extends { type: 'boolean' }
  ? boolean | undefined
  : F extends { multiple: true }
    ? string[]
    : F extends { default: string } | { required: true }
      ? string
      : string | undefined

/** The parsed flags of a command, its own and `--config`. */
export type Values<F extends Flags> = { -readonly [K in keyof F]: FlagValue<F[K]> } & { config: string | undefined }

/** One run of a command, as its `run` sees it. */
export interface Invocation<F extends Flags> {
  values: Values<F>
  /** Exactly as many as the command names. */
  positionals: string[]
  /** The arguments after the command's name, as given. */
  args: string[]
  /** Whether the flag is on the command line (rather than defaulted). */
  given(name: keyof F & string): boolean
  /** A bad command line (status 2), reported with the command's usage. */
  usageError(message: string): CliError
}

/** The definition of a command. */
export interface CommandSpec<F extends Flags> {
  /** `clients add` */
  name: string
  /** One line, in the command lists. */
  summary: string
  /** Names of the required positional arguments (`ID`). */
  positionals?: readonly string[]
  /** The help between the usage and the options. */
  description: string
  flags: F
  /** The help after the options. */
  notes?: string
  run(invocation: Invocation<F>): Promise<number | undefined>
}

/** A command ready to dispatch to. */
export interface Command {
  readonly name: string
  readonly summary: string
  readonly positionals: readonly string[]
  /** The usage lines, shown with errors and on top of the help. */
  readonly usage: string
  /** The whole `--help`. */
  readonly help: string
  /** Parses `args` (what follows the command's name) and runs; the exit status, undefined while serving. */
  execute(args: string[]): Promise<number | undefined>
}

/** The flags every command takes. */
const COMMON = {
  config: { type: 'string', value: 'FILE', description: 'the configuration file (default: $GATEHOUSE_CONFIG)' },
  help: { type: 'boolean', short: 'h', description: 'this help' },
} as const satisfies Flags

/** Where the usage lines wrap (the widest usage, `clients add`, takes three lines). */
const USAGE_WIDTH = 110
/** Spaces between the widest flag and its description. */
const GAP = 3

function flagTerm(name: string, flag: Flag): string {
  return `--${name}${flag.type === 'string' ? ` ${flag.value ?? name.toUpperCase()}` : ''}`
}

/** The flags as the usage line shows them, in definition order. */
function usageTerms(flags: Flags): string[] {
  const terms: string[] = []
  const shown = new Set<string>()
  for (const [name, flag] of Object.entries(flags)) {
    if (shown.has(name)) continue
    const term = flagTerm(name, flag)
    const other = flag.conflicts !== undefined ? flags[flag.conflicts] : undefined
    if (flag.conflicts !== undefined && other) {
      shown.add(flag.conflicts)
      terms.push(`[${term} | ${flagTerm(flag.conflicts, other)}]`)
    } else if (flag.required) {
      terms.push(flag.multiple ? `${term} [${term}]...` : term)
    } else {
      terms.push(flag.multiple ? `[${term}]...` : `[${term}]`)
    }
  }
  return terms
}

/** `Usage: gatehouse NAME POSITIONALS FLAGS [--config FILE]`, wrapped under the first term. */
function usageOf(spec: CommandSpec<Flags>): string {
  const head = `Usage: gatehouse ${spec.name}`
  const terms = [...(spec.positionals ?? []), ...usageTerms(spec.flags), `[${flagTerm('config', COMMON.config)}]`]
  const lines = [head]
  for (const term of terms) {
    const last = lines.length - 1
    if ((lines[last] as string).length + 1 + term.length > USAGE_WIDTH) {
      lines.push(`${' '.repeat(head.length)} ${term}`)
    } else {
      lines[last] = `${lines[last]} ${term}`
    }
  }
  return lines.join('\n')
}

/** A flag's help lines: the description, then (required, repeatable, default …), then the choices. */
function describeFlag(flag: Flag): string[] {
  const [first = '', ...rest] = flag.description.split('\n')
  const tags = [
    flag.required ? 'required' : undefined,
    flag.multiple ? 'repeatable' : undefined,
    flag.default !== undefined ? `default ${flag.default}` : undefined,
  ].filter((tag) => tag !== undefined)
  const head = `${first}${tags.length > 0 ? ` (${tags.join(', ')})` : ''}${flag.choices ? `: ${flag.choices.join(', ')}` : ''}`
  return [head, ...rest]
}

/** The flags in two columns: `-h, --help   description`. */
function flagList(flags: Flags): string {
  const entries = Object.entries(flags)
  const terms = entries.map(([name, flag]) => `${flag.short ? `-${flag.short}, ` : ''}${flagTerm(name, flag)}`)
  const width = Math.max(...terms.map((term) => term.length)) + GAP
  return entries
    .flatMap(([, flag], i) =>
      describeFlag(flag).map((line, j) => `  ${(j === 0 ? (terms[i] as string) : '').padEnd(width)}${line}`),
    )
    .join('\n')
}

function helpOf(spec: CommandSpec<Flags>, usage: string): string {
  const sections = [usage, spec.description]
  if (Object.keys(spec.flags).length > 0) sections.push(`Options:\n${flagList(spec.flags)}`)
  if (spec.notes !== undefined) sections.push(spec.notes)
  sections.push(`Common options:\n${flagList(COMMON)}`)
  return sections.join('\n\n')
}

/** node:util parseArgs' messages, shortened to the point. */
function parseError(err: Error & { code?: string }): string {
  const unknown = /^Unknown option '([^']+)'/.exec(err.message)
  if (unknown) return `unknown option ${unknown[1]}`
  const unexpected = /^Unexpected argument '([^']+)'/.exec(err.message)
  if (unexpected) return `unexpected argument ${JSON.stringify(unexpected[1])}`
  const first = err.message.split(/\.(\s|$)/)[0] ?? err.message
  return first.charAt(0).toLowerCase() + first.slice(1)
}

type Parsed = Record<string, string | boolean | (string | boolean)[] | undefined>

/** The shared checks, flag by flag in definition order: required, conflicts, allowed values. */
function checkFlags(flags: Flags, values: Parsed, usageError: (message: string) => CliError): void {
  for (const [name, flag] of Object.entries(flags)) {
    const value = values[name]
    if (flag.required && (value === undefined || (Array.isArray(value) && value.length === 0))) {
      throw usageError(flag.multiple ? `at least one --${name} is required` : `--${name} is required`)
    }
    if (flag.conflicts !== undefined && value !== undefined && values[flag.conflicts] !== undefined) {
      throw usageError(`give --${name} or --${flag.conflicts}, not both`)
    }
    for (const one of value === undefined ? [] : [value].flat()) {
      if (flag.choices && !flag.choices.includes(String(one))) {
        throw usageError(`--${name} must be one of ${flag.choices.join(', ')}, got ${JSON.stringify(one)}`)
      }
    }
  }
}

/** Parses and checks `args`, then runs the command (or prints its help). */
async function execute(spec: CommandSpec<Flags>, command: Command, args: string[]): Promise<number | undefined> {
  const options: NonNullable<ParseArgsConfig['options']> = {}
  for (const [name, flag] of Object.entries<Flag>({ ...spec.flags, ...COMMON })) {
    options[name] = {
      type: flag.type,
      ...(flag.multiple ? { multiple: true } : {}),
      ...(flag.short ? { short: flag.short } : {}),
    }
  }
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (err) {
    throw new CliError(parseError(err as Error), 2, command.usage)
  }
  const values: Parsed = { ...parsed.values }
  const { positionals } = parsed
  if (values.help) {
    out(command.help)
    return 0
  }
  const usageError = (message: string) => new CliError(message, 2, command.usage)
  if (positionals.length < command.positionals.length) {
    throw usageError(`missing ${command.positionals[positionals.length]}`)
  }
  if (positionals.length > command.positionals.length) {
    throw usageError(`unexpected argument ${JSON.stringify(positionals[command.positionals.length])}`)
  }
  checkFlags(spec.flags, values, usageError)
  const given = new Set(Object.keys(values))
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (values[name] === undefined && flag.multiple) values[name] = []
    else if (values[name] === undefined && flag.default !== undefined) values[name] = flag.default
  }
  return spec.run({
    values: values as Values<Flags>,
    positionals,
    args,
    given: (name) => given.has(name),
    usageError,
  })
}

/** Makes a command of its definition: usage, help and parsing all come from `spec`. */
export function defineCommand<const F extends Flags>(spec: CommandSpec<F>): Command {
  const general = spec as unknown as CommandSpec<Flags>
  const usage = usageOf(general)
  const command: Command = {
    name: spec.name,
    summary: spec.summary,
    positionals: spec.positionals ?? [],
    usage,
    help: helpOf(general, usage),
    execute: (args) => execute(general, command, args),
  }
  return command
}

/** `--secret S`, `--secret -` (read from stdin) or undefined. */
export async function readSecret(
  value: string | undefined,
  usageError: (message: string) => CliError,
): Promise<string | undefined> {
  if (value === undefined) return undefined
  const secret = value === '-' ? await readStdin() : value
  if (secret === '') throw usageError('--secret is empty')
  return secret
}
