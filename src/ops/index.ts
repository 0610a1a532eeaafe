/**
 * @module ops
 * Operations: health, the landing page and the demo client. This index is what the rest of the
 * code imports; nothing outside the folder imports its other files.
 */
export { createDemoClient } from './demo_client.ts'
export { type CheckResult, createProbes } from './health.ts'
export { landingPage } from './landing.ts'
