/**
 * Whether a promise settles (either way) within `ms` milliseconds, timers and I/O running
 * meanwhile: for "not answered yet" checks that must not hang when the answer never comes.
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false
  const mark = (): void => {
    done = true
  }
  promise.then(mark, mark)
  await new Promise((resolve) => setTimeout(resolve, ms))
  return done
}
