/**
 * `oidcc-refresh-token` of the Form Post Basic OP plan (`oidcc-formpost-basic-certification-test-plan`): the Basic
 * plan's module with ResponseMode form_post (#30). The scenario is in `../basic_modules.ts`.
 */
import { describe, it } from 'vitest'
import { runBasicModule } from '../basic_modules.ts'
import { FORMPOST_PLAN } from '../suite.ts'

describe(`#30 ${FORMPOST_PLAN}`, () => {
  it('oidcc-refresh-token (form_post)', () => runBasicModule('oidcc-refresh-token', 'form_post'), 60_000)
})
