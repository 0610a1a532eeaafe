#!/usr/bin/env node
// `npx gatehouse`: the package ships TypeScript sources, so this launcher registers tsx's loader
// (independent of the caller's tsconfig) and hands over to bin/gatehouse.ts.
import { register } from 'tsx/esm/api'

register({ tsconfig: false })
const { run } = await import('./gatehouse.ts')
await run(process.argv.slice(2))
