/** `npm test` names the groups it skips and what would run them (test/global_setup.ts). */
import { describe, expect, it } from 'vitest'
import { skippedGroups } from '../global_setup.ts'

describe('the skipped-groups report', () => {
  it('#22 names PostgreSQL, Redis, Chromium, the Next.js and MCP examples with what enables each, and nothing when all run', () => {
    const none = skippedGroups({}, () => false).map((group) => group.how)
    expect(none).toEqual([
      expect.stringContaining('DATABASE_URL'),
      expect.stringContaining('REDIS_URL'),
      expect.stringContaining('redis-server'), // #43
      expect.stringContaining('GATEHOUSE_NODE22'), // #28 item 1
      expect.stringContaining('chromium'),
      expect.stringContaining('examples/nextjs'),
      expect.stringContaining('examples/mcp-server'),
      expect.stringContaining('examples/cloudflare-worker'), // #28 item 7
    ])
    const all = { DATABASE_URL: 'postgres://x', REDIS_URL: 'redis://x', GATEHOUSE_TEST_NEXTJS: '1' }
    expect(skippedGroups(all, () => true)).toEqual([])
  })
})
