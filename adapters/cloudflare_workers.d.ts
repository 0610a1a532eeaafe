/**
 * The one `cloudflare:workers` API adapters/workers.ts uses, declared for tsc (wrangler and
 * workerd provide the module; @cloudflare/workers-types declares all of it, but its globals clash
 * with the DOM and Node types the rest of the package compiles with). Not shipped.
 */
declare module 'cloudflare:workers' {
  /** Keeps the current invocation alive until `promise` settles. */
  export function waitUntil(promise: Promise<unknown>): void
}

/** The one `cloudflare:sockets` API adapters/workerd_socket.ts uses. */
declare module 'cloudflare:sockets' {
  export function connect(address: string, options?: { secureTransport?: 'off' | 'on' | 'starttls' }): unknown
}
