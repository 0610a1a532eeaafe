// The public signing keys (jwks_uri).
import { gatehouseRoute } from '@/lib/gatehouse'

export const runtime = 'nodejs'
export const dynamic = 'force-dynamic'

export const GET = gatehouseRoute
export const HEAD = gatehouseRoute
export const POST = gatehouseRoute
export const OPTIONS = gatehouseRoute
// Gatehouse answers these with its JSON 405 and Allow, like any other endpoint.
export const PUT = gatehouseRoute
export const PATCH = gatehouseRoute
export const DELETE = gatehouseRoute
