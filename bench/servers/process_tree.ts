/**
 * The processes under a bench server's launcher (gatehouse_workers.ts, ceiling_workers.ts): workerd
 * is a child of Miniflare's Node process, and bench/run.ts counts the CPU time of all of them.
 */
import { readFileSync, readdirSync } from 'node:fs'

/** Every descendant of `pid`, with its command name, from /proc. */
export function descendants(pid: number): { pid: number; name: string }[] {
  const children = new Map<number, { pid: number; name: string }[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), { pid: Number(entry), name }])
    } catch {
      // exited meanwhile
    }
  }
  const found: { pid: number; name: string }[] = []
  const visit = (parent: number): void => {
    for (const child of children.get(parent) ?? []) {
      found.push(child)
      visit(child.pid)
    }
  }
  visit(pid)
  return found
}
