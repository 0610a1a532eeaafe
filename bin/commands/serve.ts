/** `gatehouse serve`: the server on Node, exactly as `npm start` (bin/serve_node.ts). */
import { defineCommand } from '../args.ts'

export const serve = defineCommand({
  name: 'serve',
  summary: 'start the server (what npm start does)',
  description: `Starts the server on Node, exactly as npm start: the same flags, environment and output.

Environment:
  PORT     port to listen on (default 3000)
  HOST     address to listen on (default localhost)
  ISSUER   issuer identifier, used byte for byte (default http://localhost:PORT)
  LOG_FORMAT         text (default) or json: one JSON object per line
  METRICS            true: Prometheus metrics at /metrics (METRICS_PORT: on their own port)
  SHUTDOWN_TIMEOUT   seconds in-flight requests get on SIGTERM/Ctrl-C (default 10)
  GATEHOUSE_CONFIG, GATEHOUSE_STORE, DATABASE_URL, REDIS_URL, ...: as for the other commands

Serves /healthz, /readyz and a landing page at /; with the demo seed, try sign-in at /demo.
Without a configuration file, the in-memory store gets the demo clients and user; a persistent
store gets them only with --demo (they stay there, and their secrets are public). SIGTERM or
Ctrl-C stops it, letting in-flight requests finish.`,
  flags: {
    demo: {
      type: 'boolean',
      description: 'without --config, seed the demo clients into a persistent store too\n(or GATEHOUSE_DEMO=1)',
    },
  },
  async run({ args }) {
    // bin/serve_node.ts reads its flags from process.argv, as under `npm start`.
    process.argv = [process.argv[0] as string, process.argv[1] as string, ...args]
    await import('../serve_node.ts')
    return undefined // keeps running until a signal
  },
})
