// Every /connect/* endpoint: authorize, token, userinfo, introspect, revoke, logout, interaction.
export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

export { DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT } from '@/lib/gatehouse'
