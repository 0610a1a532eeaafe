/**
 * #28 item 6: test files that run inside workerd (Cloudflare's Workers runtime) through
 * @cloudflare/vitest-pool-workers: test/workerd/*.workerd.ts (no `.test` suffix, so the normal
 * suite never collects them). Needs Node 22 (Miniflare); test/storage/workerd.test.ts runs this
 * config under Node 22 and asserts it passed. DATABASE_URL reaches the Worker as a binding.
 */
import { cloudflareTest } from '@cloudflare/vitest-pool-workers'
import { defineConfig } from 'vitest/config'

/** DATABASE_URL for a Hyperdrive binding, which Miniflare wants with a password (trust auth ignores it). */
function hyperdriveUrl(url: string): string {
  const parsed = new URL(url)
  if (!parsed.password) parsed.password = 'unused'
  return parsed.href
}

export default defineConfig({
  plugins: [
    cloudflareTest({
      miniflare: {
        compatibilityDate: '2026-08-01', // as bin/serve_workers.ts (COMPATIBILITY_DATE; that module is a script)
        compatibilityFlags: ['nodejs_compat'],
        bindings: { DATABASE_URL: process.env.DATABASE_URL ?? '' },
        // A local Hyperdrive binding (Miniflare proxies it to the database), as `wrangler dev` has.
        ...(process.env.DATABASE_URL ? { hyperdrives: { HYPERDRIVE: hyperdriveUrl(process.env.DATABASE_URL) } } : {}),
        d1Databases: ['DB'],
      },
    }),
  ],
  test: {
    include: ['test/workerd/**/*.workerd.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
