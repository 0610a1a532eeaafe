/**
 * @module storage/packed_map
 * A string-keyed map of expiring JSON records whose keys and values live as bytes in ArrayBuffers
 * (outside the JavaScript heap's pages) instead of as objects on it.
 *
 * Why: a million refresh tokens kept as objects are ~400 MB of V8 heap pages, and every young
 * generation GC walks the old generation's page list (measured: ~2 ms per scavenge at 1M tokens
 * against 0.5 ms with an empty store, a scavenge every ~50 ms under load; a full GC of that heap
 * took 420 ms). Packed, the same tokens are a few hundred ArrayBuffers that no GC looks into.
 *
 * Layout: append-only segments of 1 MiB (a record that does not fit gets a segment of its own),
 * each entry `u32 key bytes | u32 value bytes | f64 expiresAt | key (UTF-8) | value (JSON, UTF-8)`
 * starting on an 8-byte boundary. An open-addressing index (linear probing, load ≤ 1/2,
 * backward-shift deletion) maps a seeded FNV-1a hash of the key to the entry's location; each slot
 * is two adjacent uint32 (hash, location), so a probe reads one cache line.
 * Overwritten and deleted entries are dead bytes; a sealed segment that is half dead is compacted
 * (its live entries moved to the active segment) and released. Records are copied by JSON on the
 * way in and out, so callers never share them.
 *
 * Cost at scale (measured; bench/README.md, "A million stored tokens"): with a million entries a
 * lookup misses the caches and the TLB in the index and again at the record. Hash and location in
 * two arrays (two lines on two pages per probe) cost ~2.7 points more of introspection throughput
 * at 1M tokens.
 */

const SEGMENT_BYTES = 1 << 20
/**
 * An entry's location is one uint32: segment index × 2^17 + byte offset ÷ 8 (entries start on
 * 8-byte boundaries; a record larger than a segment gets a segment of its own at offset 0).
 */
const OFFSET_BITS = 17
const MAX_SEGMENTS = 2 ** (32 - OFFSET_BITS)
const locationOf = (index: number, offset: number) => index * 2 ** OFFSET_BITS + offset / 8
const segmentOf = (location: number) => location >>> OFFSET_BITS
const offsetOf = (location: number) => (location & (2 ** OFFSET_BITS - 1)) * 8
const HEADER_BYTES = 16
const MIN_CAPACITY = 64

const encoder = new TextEncoder()
const decoder = new TextDecoder()

interface Segment {
  bytes: Uint8Array
  view: DataView
  /** Bytes written. */
  used: number
  /** Bytes of entries that were overwritten or deleted. */
  dead: number
}

/** `bytes` rounded up to a multiple of 8 (where the next entry starts). */
const alignUp = (bytes: number) => (bytes + 7) & ~7

/** Seeded FNV-1a over `bytes[start, start + length)`; never 0 (0 marks an empty slot). */
function hashBytes(bytes: Uint8Array, start: number, length: number, seed: number): number {
  let hash = seed
  for (let i = start, end = start + length; i < end; i++) hash = Math.imul(hash ^ (bytes[i] as number), 0x01000193)
  return hash >>> 0 || 1
}

export interface PackedRecordMapOptions {
  /** Clock in epoch seconds: a record whose `expiresAt` is at or before it is gone. */
  now: () => number
  /** A full sweep of expired entries runs after this many writes, or the map's size if larger. */
  sweepEvery: number
}

/** Expiring JSON records by string key, stored as bytes. Synchronous throughout (callers rely on it for atomicity). */
export class PackedRecordMap<V extends { expiresAt: number }> {
  readonly #now: () => number
  readonly #sweepEvery: number
  /** Per-process hash seed: stored keys cannot be chosen to collide without knowing it. */
  readonly #seed = crypto.getRandomValues(new Uint32Array(1))[0] as number
  #segments: (Segment | undefined)[] = []
  readonly #freeSegments: number[] = []
  #active: Segment | undefined
  #activeIndex = -1
  /** The index: per slot, the key's hash (0 = empty) and the entry's location, side by side (one cache line per probe). */
  #slots = new Uint32Array(MIN_CAPACITY * 2)
  #mask = MIN_CAPACITY - 1
  #size = 0
  #writes = 0
  /** The UTF-8 bytes of the key being looked up. */
  #key = new Uint8Array(256)
  #keyLength = 0
  #keyHash = 0

  constructor(options: PackedRecordMapOptions) {
    this.#now = options.now
    this.#sweepEvery = options.sweepEvery
  }

  /** Live and expired-but-unswept entries. */
  get size(): number {
    return this.#size
  }

  /** A fresh copy of the record, or undefined when absent or expired (an expired one is removed). */
  get(key: string): V | undefined {
    const slot = this.#find(key)
    if (slot < 0) return undefined
    const location = this.#slots[slot * 2 + 1] as number
    const segment = this.#segments[segmentOf(location)] as Segment
    const offset = offsetOf(location)
    if (segment.view.getFloat64(offset + 8, true) <= this.#now()) {
      this.#removeSlot(slot)
      return undefined
    }
    const keyBytes = segment.view.getUint32(offset, true)
    const start = offset + HEADER_BYTES + keyBytes
    const json = decoder.decode(segment.bytes.subarray(start, start + segment.view.getUint32(offset + 4, true)))
    return JSON.parse(json) as V
  }

  /** Whether an unexpired record is stored under `key` (nothing is decoded). */
  has(key: string): boolean {
    const slot = this.#find(key)
    if (slot < 0) return false
    if (this.#expiresAt(this.#slots[slot * 2 + 1] as number) <= this.#now()) {
      this.#removeSlot(slot)
      return false
    }
    return true
  }

  /** Stores a copy of `value` (as JSON) under `key`, replacing any previous record. */
  set(key: string, value: V): void {
    const json = JSON.stringify(value)
    const slot = this.#find(key)
    const hash = this.#keyHash
    // Appending may compact a sealed segment, which moves entries: slots stay, locations change.
    const location = this.#append(json, value.expiresAt)
    if (slot >= 0) {
      const previous = this.#slots[slot * 2 + 1] as number
      this.#slots[slot * 2 + 1] = location
      this.#markDead(previous)
    } else {
      if ((this.#size + 1) * 2 > this.#mask + 1) this.#grow()
      this.#insertSlot(hash, location)
      this.#size++
    }
    // A full scan after as many writes as there are entries (at least sweepEvery): O(1) per write.
    if (++this.#writes >= Math.max(this.#sweepEvery, this.#size)) this.sweep()
  }

  delete(key: string): boolean {
    const slot = this.#find(key)
    if (slot < 0) return false
    this.#removeSlot(slot)
    return true
  }

  /** Removes every expired entry. */
  sweep(): void {
    this.#writes = 0
    const now = this.#now()
    for (let slot = 0; slot <= this.#mask; slot++) {
      // Deletion shifts a later entry into this slot: look at the slot again until it keeps one.
      while (this.#slots[slot * 2] !== 0 && this.#expiresAt(this.#slots[slot * 2 + 1] as number) <= now)
        this.#removeSlot(slot)
    }
  }

  /** Bytes held in segments (live, dead and unused tail), for memory reports. */
  get segmentBytes(): number {
    let total = 0
    for (const segment of this.#segments) total += segment?.bytes.length ?? 0
    return total
  }

  #expiresAt(location: number): number {
    const segment = this.#segments[segmentOf(location)] as Segment
    return segment.view.getFloat64(offsetOf(location) + 8, true)
  }

  /** Encodes `key` into the scratch bytes and returns its slot, or -1. */
  #find(key: string): number {
    if (this.#key.length < key.length * 3) this.#key = new Uint8Array(key.length * 3)
    const keyLength = encoder.encodeInto(key, this.#key).written
    this.#keyLength = keyLength
    const hash = hashBytes(this.#key, 0, keyLength, this.#seed)
    this.#keyHash = hash
    const slots = this.#slots
    for (let slot = hash & this.#mask; ; slot = (slot + 1) & this.#mask) {
      const stored = slots[slot * 2] as number
      if (stored === 0) return -1
      if (stored === hash && this.#keyEquals(slots[slot * 2 + 1] as number, keyLength)) return slot
    }
  }

  #keyEquals(location: number, keyLength: number): boolean {
    const segment = this.#segments[segmentOf(location)] as Segment
    const offset = offsetOf(location)
    if (segment.view.getUint32(offset, true) !== keyLength) return false
    const bytes = segment.bytes
    const key = this.#key
    for (let i = 0, at = offset + HEADER_BYTES; i < keyLength; i++, at++) if (bytes[at] !== key[i]) return false
    return true
  }

  /** Writes an entry for the scratch key and `json`; returns its location. */
  #append(json: string, expiresAt: number): number {
    const keyLength = this.#keyLength
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    let bytes = HEADER_BYTES + keyLength + json.length * 3
    // A value that might not fit a segment is encoded first, so that its room is exact.
    const encoded = bytes > SEGMENT_BYTES ? encoder.encode(json) : undefined
    if (encoded) bytes = HEADER_BYTES + keyLength + encoded.length
    const index = this.#room(bytes)
    const segment = this.#segments[index] as Segment
    const offset = segment.used
    const valueStart = offset + HEADER_BYTES + keyLength
    let valueLength: number
    if (encoded) {
      segment.bytes.set(encoded, valueStart)
      valueLength = encoded.length
    } else valueLength = encoder.encodeInto(json, segment.bytes.subarray(valueStart)).written
    segment.bytes.set(this.#key.subarray(0, keyLength), offset + HEADER_BYTES)
    segment.view.setUint32(offset, keyLength, true)
    segment.view.setUint32(offset + 4, valueLength, true)
    segment.view.setFloat64(offset + 8, expiresAt, true)
    segment.used = alignUp(valueStart + valueLength)
    return locationOf(index, offset)
  }

  /**
   * The index of a segment with room for `bytes` at its `used` offset: the active one (opening new
   * ones as needed), or, for an entry larger than a segment, a new segment of its own.
   */
  #room(bytes: number): number {
    if (bytes > SEGMENT_BYTES) return this.#newSegment(bytes)
    // Opening a segment may compact the one it seals into it, so the room is checked again.
    while (this.#active === undefined || this.#active.bytes.length - this.#active.used < bytes) this.#openSegment()
    return this.#activeIndex
  }

  #newSegment(size: number): number {
    const index = this.#freeSegments.pop() ?? this.#segments.length
    if (index >= MAX_SEGMENTS) throw new RangeError('the in-memory store is full')
    const buffer = new ArrayBuffer(size)
    this.#segments[index] = { bytes: new Uint8Array(buffer), view: new DataView(buffer), used: 0, dead: 0 }
    return index
  }

  /** Starts a new active segment; compacts the sealed one into it when half dead. */
  #openSegment(): void {
    const sealed = this.#active
    const sealedIndex = this.#activeIndex
    const index = this.#newSegment(SEGMENT_BYTES)
    this.#active = this.#segments[index] as Segment
    this.#activeIndex = index
    if (sealed && sealed.dead * 2 >= sealed.used) this.#compact(sealedIndex)
  }

  #markDead(location: number): void {
    const index = segmentOf(location)
    const segment = this.#segments[index] as Segment
    const offset = offsetOf(location)
    segment.dead += alignUp(
      HEADER_BYTES + segment.view.getUint32(offset, true) + segment.view.getUint32(offset + 4, true),
    )
    if (segment !== this.#active && segment.dead * 2 >= segment.used) this.#compact(index)
  }

  /** Moves the live entries of a sealed segment to the active one and releases it. */
  #compact(index: number): void {
    const segment = this.#segments[index] as Segment
    // Released first, so that moving its entries never marks it dead again (or compacts it twice).
    this.#segments[index] = undefined
    for (let offset = 0; offset < segment.used; ) {
      const keyLength = segment.view.getUint32(offset, true)
      const length = HEADER_BYTES + keyLength + segment.view.getUint32(offset + 4, true)
      const hash = hashBytes(segment.bytes, offset + HEADER_BYTES, keyLength, this.#seed)
      const slot = this.#slotOf(locationOf(index, offset), hash)
      if (slot >= 0) this.#slots[slot * 2 + 1] = this.#appendRaw(segment.bytes.subarray(offset, offset + length))
      offset += alignUp(length)
    }
    this.#freeSegments.push(index)
  }

  /** The slot that points at `location`, or -1 (the entry there is dead). */
  #slotOf(location: number, hash: number): number {
    for (let slot = hash & this.#mask; ; slot = (slot + 1) & this.#mask) {
      const stored = this.#slots[slot * 2] as number
      if (stored === 0) return -1
      if (stored === hash && this.#slots[slot * 2 + 1] === location) return slot
    }
  }

  /** Copies an encoded entry into the active segment; returns its location. */
  #appendRaw(entry: Uint8Array): number {
    const index = this.#room(entry.length)
    const segment = this.#segments[index] as Segment
    const offset = segment.used
    segment.bytes.set(entry, offset)
    segment.used = alignUp(offset + entry.length)
    return locationOf(index, offset)
  }

  /** Puts a new (hash, location) pair into the first free slot of its probe run. */
  #insertSlot(hash: number, location: number): void {
    let slot = hash & this.#mask
    while (this.#slots[slot * 2] !== 0) slot = (slot + 1) & this.#mask
    this.#slots[slot * 2] = hash
    this.#slots[slot * 2 + 1] = location
  }

  /** Empties `slot`, shifting back the entries of its probe run that would otherwise be lost. */
  #removeSlot(slot: number): void {
    const slots = this.#slots
    const location = slots[slot * 2 + 1] as number
    const mask = this.#mask
    let hole = slot
    for (let next = (slot + 1) & mask; slots[next * 2] !== 0; next = (next + 1) & mask) {
      const home = (slots[next * 2] as number) & mask
      // The entry at `next` may move into the hole unless its home lies cyclically in (hole, next].
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next
      if (stays) continue
      slots[hole * 2] = slots[next * 2] as number
      slots[hole * 2 + 1] = slots[next * 2 + 1] as number
      hole = next
    }
    slots[hole * 2] = 0
    slots[hole * 2 + 1] = 0
    this.#size--
    // Marked dead once out of the index, so a compaction it starts does not move it.
    this.#markDead(location)
  }

  #grow(): void {
    const old = this.#slots
    const capacity = (this.#mask + 1) * 2
    this.#slots = new Uint32Array(capacity * 2)
    this.#mask = capacity - 1
    for (let i = 0; i < old.length; i += 2) {
      const hash = old[i] as number
      if (hash !== 0) this.#insertSlot(hash, old[i + 1] as number)
    }
  }
}
