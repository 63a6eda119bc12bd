import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ENCODER_BATCH_LINES, encodeJsonlGzip, gzipHeaderMtime } from './encoder.js';

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function lines(count: number, seed = 'x'): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: `${seed}-${i}`, email: `user${i}@example.com`, text: 'héllo ✓', schema_version: 1 }),
  );
}

describe('encodeJsonlGzip', () => {
  it('writes each line followed by a newline, as valid gzip, and counts', async () => {
    const input = lines(2_345);
    const encoding = encodeJsonlGzip(input);
    const bytes = await collect(encoding.stream);
    const stats = await encoding.done;
    const text = `${input.join('\n')}\n`;
    expect(gunzipSync(bytes).toString('utf8')).toBe(text);
    expect(stats).toEqual({
      lines: 2_345,
      uncompressedBytes: Buffer.byteLength(text),
      compressedBytes: bytes.length,
    });
  });

  it('reads async iterables', async () => {
    async function* source() {
      for (const line of lines(1_500)) {
        yield line;
        if (line.endsWith('0}')) await tick();
      }
    }
    const encoding = encodeJsonlGzip(source());
    const bytes = await collect(encoding.stream);
    expect(gunzipSync(bytes).toString('utf8').split('\n')).toHaveLength(1_501);
    expect((await encoding.done).lines).toBe(1_500);
  });

  it('is deterministic: gzip mtime 0, the same bytes for the same lines whatever the batching', async () => {
    const input = lines(5_000);
    const first = await collect(encodeJsonlGzip(input).stream);
    const again = await collect(encodeJsonlGzip(input).stream);
    const otherBatches = await collect(encodeJsonlGzip(input, { batchLines: 7 }).stream);
    expect(gzipHeaderMtime(first)).toBe(0);
    const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(digest(again)).toBe(digest(first));
    expect(digest(otherBatches)).toBe(digest(first));
  });

  it('encodes no lines as an empty gzip member', async () => {
    const encoding = encodeJsonlGzip([]);
    const bytes = await collect(encoding.stream);
    expect(gunzipSync(bytes).length).toBe(0);
    expect(await encoding.done).toMatchObject({ lines: 0, uncompressedBytes: 0 });
  });

  it('holds the source back while nobody reads (backpressure)', async () => {
    // Prepare: incompressible lines, so gzip output fills the buffers quickly.
    let pulled = 0;
    const total = 200_000;
    function* source() {
      for (let i = 0; i < total; i++) {
        pulled += 1;
        yield randomBytes(48).toString('hex');
      }
    }
    // Act: start encoding, read nothing for a while.
    const encoding = encodeJsonlGzip(source());
    for (let i = 0; i < 50; i++) await tick();
    const pulledWhilePaused = pulled;
    // Assess: the source stopped far short of the end, and resumes once read.
    expect(pulledWhilePaused).toBeLessThan(total / 4);
    expect(pulledWhilePaused).toBeGreaterThanOrEqual(ENCODER_BATCH_LINES);
    await collect(encoding.stream);
    expect(pulled).toBe(total);
  });

  it('fails the stream with the source error and stops reading the source', async () => {
    let closed = false;
    function* source() {
      try {
        yield* lines(10);
        throw new Error('event log read failed');
      } finally {
        closed = true;
      }
    }
    const encoding = encodeJsonlGzip(source());
    await expect(collect(encoding.stream)).rejects.toThrow('event log read failed');
    await expect(encoding.done).rejects.toThrow('event log read failed');
    expect(closed).toBe(true);
  });

  it('refuses a line with a newline in it', async () => {
    const encoding = encodeJsonlGzip(['{"a":1}', '{"b":\n2}']);
    await expect(collect(encoding.stream)).rejects.toThrow('must not contain a newline');
  });

  it('stops pulling from the source when the reader destroys the stream', async () => {
    let pulled = 0;
    let returned = false;
    const source: AsyncIterable<string> = {
      [Symbol.asyncIterator]() {
        return {
          async next() {
            pulled += 1;
            return { done: false, value: randomBytes(48).toString('hex') };
          },
          async return() {
            returned = true;
            return { done: true, value: undefined };
          },
        };
      },
    };
    const encoding = encodeJsonlGzip(source);
    for (let i = 0; i < 20; i++) await tick();
    encoding.stream.destroy();
    for (let i = 0; i < 20; i++) await tick();
    const after = pulled;
    for (let i = 0; i < 20; i++) await tick();
    expect(returned).toBe(true);
    expect(pulled).toBe(after);
  });
});
