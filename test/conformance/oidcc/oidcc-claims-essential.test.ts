/**
 * `oidcc-claims-essential` of the Basic OP plan (`oidcc-basic-certification-test-plan`, client_secret_basic, default
 * response mode) (#30). The scenario is in `./basic_modules.ts`; `formpost/oidcc-claims-essential.test.ts` runs it
 * with form_post.
 */
import { describe, it } from 'vitest'
import { runBasicModule } from './basic_modules.ts'
import { BASIC_PLAN } from './suite.ts'

describe(`#30 ${BASIC_PLAN}`, () => {
  it('oidcc-claims-essential', () => runBasicModule('oidcc-claims-essential', 'default'), 60_000)
})
