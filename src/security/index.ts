/**
 * @module security
 * Secrets hashing, throttling, networks, outbound requests and request metadata. This index is what the rest of the
 * code imports; nothing outside the folder imports its other files.
 */
export {
  addressBucket,
  canonicalAddress,
  inNetworks,
  isCidr,
  isLoopback,
  isPublicAddress,
  networkBucket,
} from './networks.ts'
export { type CallbackOutcome, type CallbackPost, callbackUrl, postCallback, sleep } from './callback_post.ts'
export {
  fetchPublic,
  type OutboundFetch,
  type OutboundOptions,
  type OutboundRefusal,
  type OutboundResult,
  type PlainFetch,
} from './outbound.ts'
export { bindRequest, metaOf } from './request_meta.ts'
export {
  checkSecret,
  createVerificationCache,
  DEFAULT_ITERATIONS,
  hashIterations,
  hashSecret,
  isSecretHash,
  rehashSecret,
  type SecretCheck,
  type SecretDigest,
  unmatchableHash,
  verifySecret,
  WORKERS_PBKDF2_LIMIT,
} from './secrets.ts'
export {
  type AttemptLimits,
  attemptRules,
  type AttemptRules,
  createExclusiveRunner,
  createRulesCache,
  fetchBudget,
  type FetchBudget,
  type Limiter,
  storeLimiter,
  takeAttempt,
  throttledAfter,
  type ThrottleRule,
} from './throttle.ts'
