/**
 * A self-signed TLS certificate for test origins (openssl): one certificate for the names given,
 * which is its own CA (pass `cert` as the client's `ca`).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestCert {
  /** The directory holding key.pem and cert.pem. */
  dir: string
  key: string
  cert: string
  remove(): void
}

/** A P-256 certificate for `names` (DNS subject alternative names), valid two days. */
export function selfSignedCert(names: readonly string[]): TestCert {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cert-'))
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'key.pem',
      '-out',
      'cert.pem',
      '-days',
      '2',
      '-subj',
      `/CN=${names[0] ?? 'test'}`,
      '-addext',
      `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}`,
    ],
    { cwd: dir, stdio: 'pipe' },
  )
  return {
    dir,
    key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
