// Which traces this instance has let go of from memory in the last assembly window: a Bloom filter of their keys, in
// two generations that each cover one window. A trace assembled and quiet is evicted (assembly.ts); when spans of it
// come again (a re-export, a late child), the filter says it may have been seen and its spans are read back from
// `otlp_traces`. A false positive costs one such read; the filter never forgets a trace within the window.

// 0.1% false positives at the capacity: 10 hash functions and ~14.4 bits a key.
const BITS_PER_KEY = 14.4;
const HASHES = 10;

/** Two 32-bit FNV-1a hashes of a key (with different offsets), for double hashing. */
function hashes(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i += 1) {
    const code = key.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
  }
  return [a >>> 0, (b >>> 0) | 1];
}

class BloomFilter {
  private readonly bits: Uint8Array;
  private readonly size: number;

  constructor(capacity: number) {
    this.size = Math.max(64, Math.ceil(capacity * BITS_PER_KEY));
    this.bits = new Uint8Array(Math.ceil(this.size / 8));
  }

  private positions(key: string, visit: (bit: number) => boolean): boolean {
    const [a, b] = hashes(key);
    for (let i = 0; i < HASHES; i += 1) if (!visit((a + i * b) % this.size)) return false;
    return true;
  }

  add(key: string): void {
    this.positions(key, (bit) => {
      this.bits[bit >>> 3] |= 1 << (bit & 7);
      return true;
    });
  }

  mightHave(key: string): boolean {
    return this.positions(key, (bit) => (this.bits[bit >>> 3] & (1 << (bit & 7))) !== 0);
  }
}

export class SeenTraces {
  private current: BloomFilter;
  private previous: BloomFilter;
  private currentSince: number;

  /** `capacity`: the traces one window may hold at 0.1% false positives; past it the rate rises, correctness holds. */
  constructor(
    private readonly windowMs: number,
    private readonly capacity: number,
    nowMs: number,
  ) {
    this.current = new BloomFilter(capacity);
    this.previous = new BloomFilter(capacity);
    this.currentSince = nowMs;
  }

  /** A key added in the last window stays for at least a window more: the generations turn over once a window. */
  private turnOver(nowMs: number): void {
    if (nowMs - this.currentSince < this.windowMs) return;
    this.previous = this.current;
    this.current = new BloomFilter(this.capacity);
    this.currentSince = nowMs;
  }

  add(key: string, nowMs: number): void {
    this.turnOver(nowMs);
    this.current.add(key);
  }

  mightHave(key: string, nowMs: number): boolean {
    this.turnOver(nowMs);
    return this.current.mightHave(key) || this.previous.mightHave(key);
  }
}
