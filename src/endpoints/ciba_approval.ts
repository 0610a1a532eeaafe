/**
 * @module endpoints/ciba_approval
 * The CIBA approval page, /connect/ciba/approve (OpenID CIBA Core 1.0 §7.2): GET `?ref=` (the link
 * the end-user got) or `?uid=` (a step), POST a step's form. The steps are in
 * interaction/ciba_approval.ts. Bad input is an HTML error page, never a redirect.
 */
import type { Context } from '../context.ts'
import { cibaApprovalStep, startCibaApproval, submitCibaApproval } from '../interaction/index.ts'
import { OAuthError } from '../errors.ts'
import { parseParams, readForm } from '../http.ts'
import { errorPage } from '../pages/index.ts'

export async function handleCibaApproval(request: Request, ctx: Context): Promise<Response> {
  const { theme } = ctx.config
  try {
    if (request.method === 'GET' || request.method === 'HEAD') {
      const query = parseParams(new URL(request.url).search.slice(1), ctx.config.limits.maxParameterLength)
      const uid = query.get('uid')
      if (uid !== undefined) return await cibaApprovalStep(request, uid, ctx)
      return await startCibaApproval(request, query.get('ref') ?? '', ctx)
    }
    return await submitCibaApproval(request, await readForm(request, ctx.config.limits), ctx)
  } catch (err) {
    if (err instanceof OAuthError) return errorPage(theme, err.code, err.message, err.status)
    throw err
  }
}
