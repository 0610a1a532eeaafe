/**
 * #28 item 4: the request scope of a Worker event (src/storage/request_scope.ts), which holds the
 * event's PostgreSQL connections, and the `scope` option of the Worker handlers (src/worker/index.ts)
 * that runs every event (the service's build included) inside one.
 */
import { describe, expect, it } from 'vitest'
import { RequestScope } from '../../../src/storage/request_scope.ts'
import { type WorkerContext, createWorkerHandlers } from '../../../src/worker/index.ts'

/** A resource that records its closing. */
function resource(closed: string[], name: string) {
  return () => ({ value: name, close: async () => void closed.push(name) })
}

describe('#28 item 4 RequestScope', () => {
  it('#28 item 4 opens a resource once per key on first use, and closes each on close()', async () => {
    const scope = new RequestScope()
    const closed: string[] = []
    const [a, b] = [{}, {}]
    let opened = 0
    const open = (name: string) => () => {
      opened++
      return resource(closed, name)()
    }
    expect(scope.use(a, open('a'))).toBe('a')
    expect(scope.use(a, open('a again'))).toBe('a')
    expect(scope.use(b, open('b'))).toBe('b')
    expect([opened, scope.open]).toEqual([2, 2])
    await scope.close()
    expect(closed.sort()).toEqual(['a', 'b'])
    expect(scope.open).toBe(0)
  })

  it('#28 item 4 close() waits for the tracked work (waitUntil), and closes what that work opened meanwhile', async () => {
    const scope = new RequestScope()
    const closed: string[] = []
    const key = {}
    scope.use(key, resource(closed, 'first'))
    let finish!: () => void
    const work = new Promise<void>((resolve) => {
      finish = resolve
    }).then(() => {
      scope.use({}, resource(closed, 'opened by the work'))
    })
    scope.track(work)
    const closing = scope.close()
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(closed).toEqual([]) // the work is still running: its connection stays open
    finish()
    await closing
    expect(closed.sort()).toEqual(['first', 'opened by the work'])
  })

  it('#28 item 4 drop() closes one resource, and the next use opens a new one', async () => {
    const scope = new RequestScope()
    const closed: string[] = []
    const key = {}
    scope.use(key, resource(closed, 'broken'))
    await scope.drop(key)
    expect(closed).toEqual(['broken'])
    expect(scope.use(key, resource(closed, 'fresh'))).toBe('fresh')
    await scope.close()
    expect(closed).toEqual(['broken', 'fresh'])
  })
})

describe('#28 item 4 the Worker handlers’ scope option', () => {
  it('#28 item 4 every event runs inside the scope, the build and the scheduled run included', async () => {
    const events: string[] = []
    let inside = false
    const ctx: WorkerContext = { waitUntil: () => {} }
    const worker = createWorkerHandlers(
      () => {
        events.push(`configure inside=${inside}`)
        return { issuer: 'https://auth.example.com' }
      },
      {
        async scope(_ctx, run) {
          inside = true
          try {
            return await run()
          } finally {
            inside = false
            events.push('scope closed')
          }
        },
        wrap: (service) => (request, info) => {
          events.push(`request inside=${inside}`)
          return service.fetch(request, info)
        },
      },
    )
    const response = await worker.fetch(
      new Request('https://auth.example.com/.well-known/openid-configuration'),
      {},
      ctx,
    )
    expect(response.status).toBe(200)
    await worker.scheduled({}, {}, ctx)
    expect(events).toEqual(['configure inside=true', 'request inside=true', 'scope closed', 'scope closed'])
  })
})
