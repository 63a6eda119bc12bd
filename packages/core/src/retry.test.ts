import { describe, expect, it } from 'vitest';
import { backoffDelayMs, RETRY, retrying } from './retry.js';

describe('backoffDelayMs', () => {
  it('doubles the ceiling from baseMs per retry up to maxMs, and sleeps a random part of it', () => {
    const backoff = { baseMs: 50, maxMs: 300 };
    const top = () => 0.999_999;
    expect([1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, backoff, top))).toEqual([
      49, 99, 199, 299, 299,
    ]);
    expect(backoffDelayMs(3, backoff, () => 0)).toBe(0);
    expect(backoffDelayMs(3, backoff, () => 0.5)).toBe(100);
  });
});

describe('retrying', () => {
  const options = (slept: number[]) => ({
    maxAttempts: 4,
    baseMs: 10,
    maxMs: 1_000,
    random: () => 0.5,
    sleep: async (ms: number) => {
      slept.push(ms);
    },
  });

  it('calls again after the backoff while the attempt asks for it, and returns the first other result', async () => {
    const slept: number[] = [];
    const calls: number[] = [];
    const result = await retrying(options(slept), async (n) => {
      calls.push(n);
      return n < 3 ? RETRY : 'done';
    });
    expect(result).toBe('done');
    expect(calls).toEqual([1, 2, 3]);
    expect(slept).toEqual([5, 10]);
  });

  it('stops after maxAttempts calls and returns RETRY', async () => {
    const slept: number[] = [];
    let calls = 0;
    const result = await retrying(options(slept), async () => {
      calls++;
      return RETRY;
    });
    expect(result).toBe(RETRY);
    expect(calls).toBe(4);
    expect(slept).toEqual([5, 10, 20]);
  });

  it('ends with the error an attempt throws, without another call', async () => {
    let calls = 0;
    await expect(
      retrying(options([]), async () => {
        calls++;
        throw new Error('not retryable');
      }),
    ).rejects.toThrow('not retryable');
    expect(calls).toBe(1);
  });
});
