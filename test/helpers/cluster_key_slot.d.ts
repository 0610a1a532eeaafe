/** Types of `cluster-key-slot` (a dependency of ioredis): the Redis Cluster hash slot of a key. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | Uint8Array): number
}
