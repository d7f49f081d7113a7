/** Seeded, deterministic randomness: the same seed always builds the same workspace. */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, maxExclusive). */
  int(min: number, maxExclusive: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Standard normal deviate. */
  gauss(): number;
  uint32(): number;
}

/** mulberry32: tiny, fast and good enough for fixtures. */
class Mulberry32 implements Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  uint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  next(): number {
    return this.uint32() / 4294967296;
  }

  int(min: number, maxExclusive: number): number {
    return min + Math.floor(this.next() * (maxExclusive - min));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new RangeError("pick from an empty list");
    return item;
  }

  gauss(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }
}

export function createRandom(seed: number): Random {
  return new Mulberry32(seed);
}

/** A well-mixed 32-bit hash of numbers and strings (FNV-1a, then murmur3's finaliser). */
export function hash32(...parts: ReadonlyArray<number | string>): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    const text = typeof part === "number" ? String(part) : part;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    h ^= 0x1f;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A random generator seeded from a hash of the given parts. */
export function randomFor(...parts: ReadonlyArray<number | string>): Random {
  return createRandom(hash32(...parts));
}

const HEX = "0123456789abcdef";

/** `count` lower-case hex digits drawn from `random`. */
export function randomHex(random: Random, count: number): string {
  let out = "";
  for (let i = 0; i < count; i++) out += HEX[random.uint32() & 15];
  return out;
}

/** A version-4-shaped UUID drawn from `random` (deterministic for a seeded generator). */
export function randomUuid(random: Random): string {
  const hex = randomHex(random, 32).split("");
  hex[12] = "4";
  hex[16] = HEX[8 + (random.uint32() & 3)] ?? "8";
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
