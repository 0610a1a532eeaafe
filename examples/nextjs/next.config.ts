import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { NextConfig } from 'next'

// `gatehouse` is linked from the repository root (`file:../..`) and ships TypeScript sources whose
// imports end in `.ts`. The root is where those files (and their own dependencies) really live, so
// Turbopack and output tracing must be allowed to read it.
const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

const nextConfig: NextConfig = {
  transpilePackages: ['gatehouse'],
  turbopack: { root: repositoryRoot },
  outputFileTracingRoot: repositoryRoot,
  // Gatehouse answers `/connect/token/` itself (a JSON 404), as everywhere else: no slash redirects.
  skipTrailingSlashRedirect: true,
}

export default nextConfig
