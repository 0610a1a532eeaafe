// OpenID Connect Discovery metadata.
export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

export { DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT } from '@/lib/gatehouse'
