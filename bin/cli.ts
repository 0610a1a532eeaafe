#!/usr/bin/env node
/**
 * `npx gatehouse`: the package's `bin`, built to plain JavaScript (dist/bin/cli.js) by
 * `npm run build`. In this repository `npx tsx bin/cli.ts` runs it from the sources.
 */
import { run } from './gatehouse.ts'

await run(process.argv.slice(2))
