/**
 * The command line's input and output: results (tables, JSON, a secret just generated) go to
 * stdout; progress and errors to stderr. Nothing here prints a stored secret.
 */

/** A result line on stdout. */
export function out(text: string): void {
  process.stdout.write(`${text}\n`)
}

/** A progress or error line on stderr. */
export function progress(text: string): void {
  process.stderr.write(`${text}\n`)
}

/** `value` as indented JSON on stdout. */
export function json(value: unknown): void {
  out(JSON.stringify(value, null, 2))
}

/** Hides credentials of URLs (`scheme://user:password@host` → `scheme://***@host`). */
export function redact(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@\s/]*@/gi, '$1***@')
}

/** Epoch seconds as an ISO 8601 time without milliseconds. */
export function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000)
}

/** Left-aligned columns, two spaces apart. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)))
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

/** Standard input as text, without its final line break (a secret piped or typed in). */
export async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) progress('Reading the secret from standard input (end with Ctrl-D)...')
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '')
}
