/**
 * What the standalone server needs of a runtime (Node, Bun, Deno): its arguments, environment,
 * file reading, an HTTP server, signals and exit. bin/serve_{node,bun,deno}.ts each provide one.
 */
import type { TokenServiceOptions } from '../src/index.ts'

/** A request handler as the runtimes' servers call it. */
export type ServeHandler = (request: Request, info?: { address?: string }) => Promise<Response>

/** A listening server. */
export interface RunningServer {
  /**
   * Stops accepting connections, lets requests in flight finish for up to `graceMs`, then closes
   * what is left; resolves when it is closed.
   */
  close(graceMs: number): Promise<void>
}

export interface Runtime {
  name: string
  args: string[]
  env: (name: string) => string | undefined
  readTextFile: (path: string) => Promise<string>
  /**
   * Starts listening; resolves once the server accepts connections. Rejects (or throws) with the
   * runtime's error when it cannot listen (`code: 'EADDRINUSE'` for a busy port on all three).
   */
  serve: (handler: ServeHandler, options: { port: number; hostname: string }) => Promise<RunningServer>
  onSignal: (signal: 'SIGTERM' | 'SIGINT', listener: () => void) => void
  /**
   * Calls `listener` once when the process that started this one exits, where that means "stop":
   * under npm (`npm start`, `npx gatehouse serve`) a shell sits between npm and the server, and
   * npm hands a SIGTERM to that shell, which exits without passing it on (#27 item 13).
   */
  onParentExit?: (listener: () => void) => void
  /** Runtime-specific service options (e.g. Node's synchronous secret digest and signer). */
  serviceOptions?: Pick<TokenServiceOptions, 'secretDigest' | 'signer' | 'sha256' | 'resolveHost' | 'outboundFetch'>
  exit: (code: number) => never
}

/** Logs `message` as an error and exits with status 1. */
export type Fail = (message: string) => never
