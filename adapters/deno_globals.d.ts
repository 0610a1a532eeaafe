/**
 * The few `Deno` APIs that adapters/deno.ts and bin/serve_deno.ts use, declared for `npm run build`
 * (tsc compiles them for `npm:gatehouse-oidc` users on Deno; Deno itself checks them against its own
 * types with `deno check`). Not shipped; Deno's own declarations take precedence there.
 */
declare namespace Deno {
  interface NetAddr {
    transport: 'tcp' | 'udp'
    hostname: string
    port: number
  }
  interface UnixAddr {
    transport: 'unix' | 'unixpacket'
    path: string
  }
  type Addr = NetAddr | UnixAddr
  interface ServeHandlerInfo {
    remoteAddr: Addr
  }
  interface HttpServer {
    readonly addr: Addr
    readonly finished: Promise<void>
    shutdown(): Promise<void>
    ref(): void
    unref(): void
  }
  interface ServeOptions {
    port?: number
    hostname?: string
    signal?: AbortSignal
    onListen?: (localAddr: Addr) => void
    onError?: (error: unknown) => Response | Promise<Response>
  }
  function serve(
    options: ServeOptions,
    handler: (request: Request, info: ServeHandlerInfo) => Response | Promise<Response>,
  ): HttpServer
  const args: string[]
  const env: { get(name: string): string | undefined; toObject(): Record<string, string> }
  const pid: number
  function readTextFile(path: string): Promise<string>
  function addSignalListener(signal: 'SIGTERM' | 'SIGINT', handler: () => void): void
  function removeSignalListener(signal: 'SIGTERM' | 'SIGINT', handler: () => void): void
  function exit(code?: number): never
  namespace errors {
    class AddrInUse extends Error {}
  }
}
