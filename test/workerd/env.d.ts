/**
 * The Worker's `env` as the tests inside workerd read it (`import { env } from 'cloudflare:workers'`):
 * the bindings vitest.workerd.config.ts gives. Merges with adapters/cloudflare_workers.d.ts.
 */
declare module 'cloudflare:workers' {
  export const env: Record<string, unknown>
}
