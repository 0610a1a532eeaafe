/**
 * @module ops
 * Operations: health, the landing page and the demo client.
 * What the rest of the code uses of this folder: nothing outside it imports its other files.
 */
export { createDemoClient } from './demo_client.ts'
export { type CheckResult, createProbes } from './health.ts'
export { landingPage } from './landing.ts'
