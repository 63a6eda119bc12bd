/**
 * The seeded randomness of the sample generators (`@sluice/eventlog` `generateEvents`, and each catalogue
 * module's sample rows): the same seed always gives the same rows. Pure: no AWS SDK.
 */

/** mulberry32: a small, fast, seeded PRNG returning floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type Random = () => number;

/** `length` random hex digits, eight per PRNG draw. */
export function hex(random: Random, length: number): string {
  let out = '';
  while (out.length < length)
    out += Math.floor(random() * 4_294_967_296)
      .toString(16)
      .padStart(8, '0');
  return out.slice(0, length);
}

/** One of `values`, uniformly. */
export function pick<T>(random: Random, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)]!;
}

/** Picks by weight from `[value, weight]` pairs. */
export function weighted<T>(table: readonly (readonly [T, number])[]): (random: Random) => T {
  const total = table.reduce((sum, [, weight]) => sum + weight, 0);
  return (random) => {
    let r = random() * total;
    for (const [value, weight] of table) {
      r -= weight;
      if (r < 0) return value;
    }
    return table[table.length - 1]![0];
  };
}
