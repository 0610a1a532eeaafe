/**
 * @module protocol/session_family
 * A family id that ends with a browser session whatever its grants: logout revokes it. Tokens that
 * must not outlive the session their subject signed in with (a token exchanged from an ID token of
 * an `offline_access` grant, whose own family survives logout) carry it in `gids` (#39 item 1).
 *
 * It is derived from the session's store id (itself the SHA-256 of the cookie), so neither the
 * exchange nor the logout writes anything, and the value in a token reveals nothing of the cookie.
 */
import type { Context } from '../context.ts'

/** The session family of the session stored under `sessionId` (its `SessionRecord.id`). */
export async function sessionFamilyId(sessionId: string, ctx: Pick<Context, 'sha256'>): Promise<string> {
  return `s.${await ctx.sha256(`gatehouse-session-family:${sessionId}`)}`
}
