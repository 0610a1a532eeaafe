/**
 * @module storage/request_scope
 * What one event of a Worker (a request, a scheduled run) owns: the database connections its store
 * opened for it. Cloudflare Workers refuse to use an I/O object (a socket) created by one request
 * from another ("Cannot perform I/O on behalf of a different request"), so a store that talks TCP
 * (PostgreSQL, through Hyperdrive or directly) cannot keep an isolate-wide pool: it opens its
 * connections in the scope of the event that needs them, on first use, and the scope closes them
 * once the event's work is done: the response, and the work it left to `waitUntil`.
 *
 * Web-standard: which scope is current is the adapter's business (adapters/workers_postgres.ts
 * keeps it in an AsyncLocalStorage, from `nodejs_compat`), through `WorkerOptions.scope`.
 *
 * @see https://developers.cloudflare.com/workers/runtime-apis/bindings/#making-changes-to-bindings
 * @see https://developers.cloudflare.com/hyperdrive/examples/connect-to-postgres/postgres-drivers-and-libraries/postgres-js/
 */

/** A resource of one scope: its value and how to close it. */
export interface ScopedResource<T> {
  value: T
  close(): Promise<void>
}

/** The resources of one event, opened on first use and closed together. */
export class RequestScope {
  readonly #resources = new Map<object, ScopedResource<unknown>>()
  readonly #work = new Set<Promise<unknown>>()

  /** The resource `key` names in this scope; `open` makes it on first use (again after `drop` or `close`). */
  use<T>(key: object, open: () => ScopedResource<T>): T {
    let resource = this.#resources.get(key) as ScopedResource<T> | undefined
    if (!resource) {
      resource = open()
      this.#resources.set(key, resource)
    }
    return resource.value
  }

  /** Closes the resource `key` names (a broken connection), so that the next `use` opens a new one. */
  drop(key: object): Promise<void> {
    const resource = this.#resources.get(key)
    if (!resource) return Promise.resolve()
    this.#resources.delete(key)
    return resource.close().catch(() => {})
  }

  /** Work of this event that outlives its response (`waitUntil`): `close` waits for it. */
  track(promise: Promise<unknown>): void {
    const settled = promise.then(
      () => {},
      () => {},
    )
    this.#work.add(settled)
    void settled.then(() => this.#work.delete(settled))
  }

  /** Number of resources open now (tests). */
  get open(): number {
    return this.#resources.size
  }

  /**
   * Waits for the tracked work, then closes every resource. Work that uses the scope while it
   * closes opens resources anew, and they are closed in turn.
   */
  async close(): Promise<void> {
    while (this.#work.size > 0 || this.#resources.size > 0) {
      if (this.#work.size > 0) await Promise.all(this.#work)
      const resources = [...this.#resources.values()]
      this.#resources.clear()
      await Promise.all(resources.map((resource) => resource.close().catch(() => {})))
    }
  }
}
