import type { NextConfig } from 'next'

// `gatehouse-oidc` is installed from its packed tarball (`npm run pack:example` in the repository root):
// built JavaScript with type declarations, so Next needs no `transpilePackages` for it.
const nextConfig: NextConfig = {
  // Gatehouse answers `/connect/token/` itself (a JSON 404), as everywhere else: no slash redirects.
  skipTrailingSlashRedirect: true,
}

export default nextConfig
