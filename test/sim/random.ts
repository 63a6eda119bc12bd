/**
 * Seeded `randomBytes` for the simulation: the API's destination and backfill ids come from it, and a
 * destination's schedule slot is a hash of its id, so without a seed the same schedule runs at other times.
 * `node:crypto`'s `randomBytes` is replaced process-wide (`syncBuiltinESMExports` updates the named imports);
 * test-only, never in the product.
 */
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { mulberry32 } from '@sluice/eventlog';

const realRandomBytes = crypto.randomBytes;

/** Truly random bytes, whatever the seeding (names that must differ between runs of one seed). */
export function unseededRandomBytes(size: number): Buffer {
  return realRandomBytes(size);
}

/** From now on, `randomBytes` is a PRNG stream of `seed`. */
export function seedRandomBytes(seed: number): void {
  const next = mulberry32(seed);
  const seeded = (size: number, callback?: (error: Error | null, bytes: Buffer) => void) => {
    const bytes = Buffer.alloc(size);
    for (let i = 0; i < size; i++) bytes[i] = Math.floor(next() * 256);
    if (callback) {
      queueMicrotask(() => callback(null, bytes));
      return undefined;
    }
    return bytes;
  };
  (crypto as { randomBytes: unknown }).randomBytes = seeded;
  syncBuiltinESMExports();
}
