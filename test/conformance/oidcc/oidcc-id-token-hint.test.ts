/**
 * `oidcc-id-token-hint` of the Basic OP plan (`oidcc-basic-certification-test-plan`, client_secret_basic, default
 * response mode) (#30). The scenario is in `./basic_modules.ts`; `formpost/oidcc-id-token-hint.test.ts` runs it
 * with form_post.
 */
import { describe, it } from 'vitest'
import { runBasicModule } from './basic_modules.ts'
import { BASIC_PLAN } from './suite.ts'

describe(`#30 ${BASIC_PLAN}`, () => {
  it('oidcc-id-token-hint', () => runBasicModule('oidcc-id-token-hint', 'default'), 60_000)
})
