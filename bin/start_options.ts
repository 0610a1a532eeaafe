/**
 * What `npm start` reads before it builds the service: the environment settings (LOG_FORMAT,
 * METRICS, METRICS_PORT, SHUTDOWN_TIMEOUT; PORT and HOST), the `--config FILE` flag (or
 * GATEHOUSE_CONFIG, or what npm swallowed of it) and the configuration file. Anything wrong ends
 * the process with status 1 and one clear line.
 */
import * as v from 'valibot'
import { type ConfigFile, parseConfigFile } from '../src/config/index.ts'
import { type Log, createLog } from './log.ts'
import type { Fail, Runtime } from './runtime.ts'

const seconds = v.pipe(
  v.string(),
  v.regex(/^\d+(\.\d+)?$/, 'must be a number of seconds'),
  v.transform(Number),
  v.maxValue(3600, 'must be at most 3600'),
)
const portNumber = v.pipe(
  v.string(),
  v.regex(/^\d{1,5}$/, 'must be a port number'),
  v.transform(Number),
  v.maxValue(65535, 'must be a port number'),
)

/** The environment settings of the standalone server besides PORT, HOST, ISSUER and the store. */
const SettingsSchema = v.object({
  /** `json`: one JSON object per line (time, level, msg, fields). Default `text`. */
  LOG_FORMAT: v.optional(v.picklist(['text', 'json'], 'must be text or json'), 'text'),
  /** `true`: serve Prometheus metrics at /metrics. Default false. */
  METRICS: v.optional(v.picklist(['true', 'false', '1', '0', ''], 'must be true or false'), 'false'),
  /** Serve the metrics at /metrics on this port (of HOST) instead of the main port. */
  METRICS_PORT: v.optional(portNumber),
  /** Seconds requests in flight get to finish after SIGTERM/SIGINT. Default 10. */
  SHUTDOWN_TIMEOUT: v.optional(seconds, '10'),
})

export type Settings = v.InferOutput<typeof SettingsSchema>

/** Our flags that npm takes for its own when they come before `--` (npm start --config F). */
const NPM_SWALLOWED = ['config'] as const

/** The flags the start scripts take besides --config. */
const BOOLEAN_FLAGS = ['--demo']

/**
 * `--demo` (or GATEHOUSE_DEMO=1|true): seed the demo clients and user into a persistent store too
 * (#27 item 13; the in-memory store gets them without a file anyway). `npm start --demo` without
 * `--` reaches us as npm_config_demo.
 */
export function readDemoFlag(runtime: Runtime, log: Log): boolean {
  if (runtime.args.includes('--demo')) return true
  const variable = runtime.env('GATEHOUSE_DEMO')
  if (variable === '1' || variable === 'true') return true
  if (runtime.env('npm_config_demo') === 'true') {
    log.warn('npm took --demo for itself; seeding the demo clients (pass flags after --: npm start -- --demo)')
    return true
  }
  return false
}

/**
 * The environment settings and the log in the format they ask for; on a bad setting, the log (in
 * the format asked for if it can tell) says which, and the process exits.
 */
export function readSettings(runtime: Runtime): { log: Log; fail: Fail; settings: Settings } {
  const parsed = v.safeParse(SettingsSchema, {
    LOG_FORMAT: runtime.env('LOG_FORMAT') || undefined,
    METRICS: runtime.env('METRICS'),
    METRICS_PORT: runtime.env('METRICS_PORT') || undefined,
    SHUTDOWN_TIMEOUT: runtime.env('SHUTDOWN_TIMEOUT') || undefined,
  })
  const log: Log = createLog(
    parsed.success ? parsed.output.LOG_FORMAT : runtime.env('LOG_FORMAT') === 'json' ? 'json' : 'text',
  )
  const fail: Fail = (message) => {
    log.error(message)
    return runtime.exit(1)
  }
  if (!parsed.success) {
    const issue = parsed.issues[0]
    const name = v.getDotPath(issue) ?? 'environment'
    return fail(`${name} ${issue.message}, got ${JSON.stringify(runtime.env(name) ?? '')}`)
  }
  return { log, fail, settings: parsed.output }
}

function flag(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === name) return args[i + 1]
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1)
  }
  return undefined
}

/** The configuration file's path: --config FILE, what npm swallowed of it, or GATEHOUSE_CONFIG. */
export function readConfigPath(runtime: Runtime, log: Log, fail: Fail): string | undefined {
  const args = runtime.args
  if (args.includes('--config') && flag(args, '--config') === undefined) fail('--config needs a file path')
  let configPath = flag(args, '--config')
  const rest = args.filter(
    (arg, i) =>
      !(arg === '--config' || args[i - 1] === '--config' || arg.startsWith('--config=') || BOOLEAN_FLAGS.includes(arg)),
  )
  // `npm start --config F` (no `--`): npm keeps the flag as npm_config_config, `true` with F left as
  // an argument (npm 11) or F itself (`--config=F`). Honour it, and say how to pass flags.
  for (const name of NPM_SWALLOWED) {
    const swallowed = runtime.env(`npm_config_${name}`)
    if (swallowed === undefined || swallowed === '' || configPath !== undefined) continue
    const value = swallowed === 'true' ? rest.find((arg) => !arg.startsWith('-')) : swallowed
    if (value === undefined) {
      fail(`npm took --${name} for itself and dropped its value; pass flags after --: npm start -- --${name} FILE`)
    }
    if (swallowed === 'true') rest.splice(rest.indexOf(value as string), 1)
    configPath = value
    log.warn(
      `npm took --${name} for itself; using ${value} as the configuration file (pass flags after --: npm start -- --${name} ${value})`,
    )
  }
  for (const arg of rest) log.warn(`ignoring unexpected argument ${JSON.stringify(arg)} (flags: --config FILE, --demo)`)
  return configPath ?? runtime.env('GATEHOUSE_CONFIG')
}

/** PORT (default 3000) and HOST (default localhost). */
export function readAddress(runtime: Runtime, fail: Fail): { port: number; hostname: string } {
  const portText = runtime.env('PORT') ?? '3000'
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535)
    fail(`PORT must be a port number, got ${JSON.stringify(portText)}`)
  return { port: Number(portText), hostname: runtime.env('HOST') ?? 'localhost' }
}

/** The configuration file, read and checked; undefined without one. */
export async function readConfigFile(
  runtime: Runtime,
  configPath: string | undefined,
  fail: Fail,
): Promise<ConfigFile | undefined> {
  if (configPath === undefined) return undefined
  let text = ''
  try {
    text = await runtime.readTextFile(configPath)
  } catch (err) {
    fail(`cannot read configuration file ${configPath}: ${(err as Error).message}`)
  }
  try {
    return parseConfigFile(text, configPath)
  } catch (err) {
    return fail((err as Error).message)
  }
}
