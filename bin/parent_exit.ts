/** Stopping a server started under npm when npm goes (`npm start`, `npm run start:workers`). */

/**
 * Under npm (`npm start`, `npx gatehouse serve`: npm sets npm_lifecycle_event), npm runs this
 * process through a shell and passes a SIGTERM sent to npm's PID to that shell alone, which exits
 * without passing it on: this process would be left serving, orphaned. Its parent changing is that
 * SIGTERM (checked every 250 ms; a process started any other way is never stopped by its parent).
 */
export function onParentExit(listener: () => void): void {
  if (process.env.npm_lifecycle_event === undefined) return
  const parent = process.ppid
  const timer = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(timer)
    listener()
  }, 250)
  timer.unref()
}
