/**
 * `npm run secret`: a new random client secret and its PBKDF2 hash (100,000 iterations, the most
 * Cloudflare's runtime computes). Give the secret to the client; put the hash in the Worker:
 *
 *   npm run secret
 *   npx wrangler secret put WEB_CLIENT_SECRET      # paste the hash
 *
 * `npm run secret -- 'a password'` hashes the given value instead (DEMO_USER_PASSWORD).
 */
import { WORKERS_PBKDF2_LIMIT, hashSecret } from 'gatehouse-oidc'

const given = process.argv[2]
const value = given ?? Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
const hash = await hashSecret(value, WORKERS_PBKDF2_LIMIT)
if (given === undefined) console.log(`secret (for the client): ${value}`)
console.log(`hash (wrangler secret put …): ${hash}`)
