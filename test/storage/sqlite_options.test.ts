/**
 * #44 item 3: the SQLite store's durability setting as `npm start` takes it: the configuration
 * file's `store.synchronous` and GATEHOUSE_SQLITE_SYNCHRONOUS (which wins), both checked. The store
 * option itself, applied and read back on each runtime's SQLite: test/storage/sqlite.test.ts.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { chooseStore } from '../../bin/store.ts'
import { StoreConfigSchema } from '../../src/config/file.ts'

const env = (vars: Record<string, string>) => (name: string) => vars[name]

describe('#44 item 3: the SQLite store’s synchronous setting', () => {
  it('#44 item 3: the configuration file takes synchronous full or normal on a sqlite store, nothing else', () => {
    const parse = (store: unknown) => v.safeParse(StoreConfigSchema, store)
    expect(parse({ type: 'sqlite', dataDir: 'd' }).success).toBe(true)
    expect(parse({ type: 'sqlite', dataDir: 'd', synchronous: 'normal' }).output).toEqual({
      type: 'sqlite',
      dataDir: 'd',
      synchronous: 'normal',
    })
    expect(parse({ type: 'sqlite', dataDir: 'd', synchronous: 'full' }).success).toBe(true)
    const off = parse({ type: 'sqlite', dataDir: 'd', synchronous: 'off' })
    expect(off.success).toBe(false)
    expect(off.issues?.[0]?.message).toBe('must be "full" or "normal"')
    expect(parse({ type: 'pglite', dataDir: 'd', synchronous: 'normal' }).success).toBe(false)
  })

  it('#44 item 3: GATEHOUSE_SQLITE_SYNCHRONOUS sets it, over the file’s; a bad value is a TypeError naming it', () => {
    expect(chooseStore(env({ GATEHOUSE_STORE: 'sqlite', GATEHOUSE_DATA_DIR: 'd' }), undefined)).toEqual({
      type: 'sqlite',
      dataDir: 'd',
    })
    expect(
      chooseStore(
        env({ GATEHOUSE_STORE: 'sqlite', GATEHOUSE_DATA_DIR: 'd', GATEHOUSE_SQLITE_SYNCHRONOUS: 'normal' }),
        undefined,
      ),
    ).toEqual({ type: 'sqlite', dataDir: 'd', synchronous: 'normal' })
    const file = { type: 'sqlite', dataDir: 'f', synchronous: 'normal' } as const
    expect(chooseStore(env({}), file)).toEqual(file)
    expect(chooseStore(env({ GATEHOUSE_SQLITE_SYNCHRONOUS: 'full' }), file)).toEqual({ ...file, synchronous: 'full' })
    expect(() =>
      chooseStore(env({ GATEHOUSE_STORE: 'sqlite', GATEHOUSE_SQLITE_SYNCHRONOUS: 'OFF' }), undefined),
    ).toThrow('GATEHOUSE_SQLITE_SYNCHRONOUS must be full or normal, got "OFF"')
  })
})
