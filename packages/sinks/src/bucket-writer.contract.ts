import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BucketError } from './classify.js';
import { gzipHeaderMtime } from './encoder.js';
import type { BucketWriter } from './writer.js';

/** What the contract needs from one implementation: a writer and a way to look into its bucket. */
export interface BucketWriterFixture {
  writer: BucketWriter;
  /** Reads an object back as stored; undefined when there is no object at `key`. */
  read(key: string): Promise<Buffer | undefined>;
  /**
   * Multipart uploads still pending under `key`, or undefined when the store cannot list them
   * (s3rver implements neither ListMultipartUploads nor AbortMultipartUpload).
   */
  pendingUploads(key: string): Promise<number | undefined>;
  /** How many times the writer asked the store to abort a multipart upload of `key`. */
  abortsRequested(key: string): number;
  /** A writer for the same store whose bucket does not exist. */
  missingBucketWriter(): BucketWriter;
}

/** Options the contract asks a factory for: a small part size exercises multipart with little data. */
export interface BucketWriterFixtureOptions {
  partSize: number;
}

/** The smallest part S3 accepts; the multipart cases write a little over one part of it. */
const PART_SIZE = 5 * 1024 * 1024;

/** Incompressible lines: about `bytes` of gzip output. */
function* noisyLines(bytes: number): Generator<string> {
  let produced = 0;
  let i = 0;
  while (produced < bytes * 1.9) {
    const line = JSON.stringify({ id: `e-${i++}`, noise: randomBytes(96).toString('hex') });
    produced += line.length + 1;
    yield line;
  }
}

function textOf(lines: string[]): string {
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * The one contract every {@link BucketWriter} implementation passes (S3, GCS, S3-compatible, local):
 * objects land whole with the right bytes, gzip is valid and deterministic, an empty source writes
 * nothing, and a failed upload leaves no object and no pending multipart upload.
 *
 * @param name the implementation, as the describe block names it
 * @param factory makes a fresh fixture; called once per test
 */
export function bucketWriterContract(
  name: string,
  factory: (options: BucketWriterFixtureOptions) => Promise<BucketWriterFixture>,
): void {
  describe(`BucketWriter contract: ${name}`, () => {
    const key = (file: string) => `contract/${randomUUID()}/email_events/date=2026-09-30/${file}`;

    it('writes a small file whose gunzipped bytes are the lines, and reports the counts', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const lines = Array.from({ length: 2_500 }, (_, i) =>
        JSON.stringify({ id: `e-${i}`, to: 'ü@example.com' }),
      );
      const target = key('email_events-0-1-0000.jsonl.gz');

      const written = await fixture.writer.writeFile(target, lines);

      const stored = await fixture.read(target);
      expect(stored).toBeDefined();
      expect(gunzipSync(stored as Buffer).toString('utf8')).toBe(textOf(lines));
      expect(gzipHeaderMtime(stored as Buffer)).toBe(0);
      expect(written).toEqual({
        key: target,
        written: true,
        lines: 2_500,
        bytes: (stored as Buffer).length,
        sha256: createHash('sha256')
          .update(stored as Buffer)
          .digest('hex'),
        uncompressedBytes: Buffer.byteLength(textOf(lines)),
      });
    });

    it('rewrites the same lines as the same bytes (a retried window is byte-identical)', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const lines = Array.from({ length: 3_000 }, (_, i) => JSON.stringify({ id: `r-${i}` }));
      const target = key('email_events-0-1-0000.jsonl.gz');
      await fixture.writer.writeFile(target, lines);
      const first = await fixture.read(target);
      await fixture.writer.writeFile(target, lines);
      expect((await fixture.read(target))?.equals(first as Buffer)).toBe(true);
    });

    it('streams a file larger than one part as a multipart upload, bytes intact', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const lines = [...noisyLines(PART_SIZE + 1024 * 1024)];
      const target = key('email_events-0-1-0001.jsonl.gz');
      async function* slowly() {
        for (const line of lines) yield line;
      }

      const written = await fixture.writer.writeFile(target, slowly());

      const stored = await fixture.read(target);
      expect(written.bytes).toBeGreaterThan(PART_SIZE);
      expect(stored?.length).toBe(written.bytes);
      expect(written.sha256).toBe(
        createHash('sha256')
          .update(stored as Buffer)
          .digest('hex'),
      );
      expect(gunzipSync(stored as Buffer).toString('utf8')).toBe(textOf(lines));
      expect(fixture.abortsRequested(target)).toBe(0);
    });

    it('writes nothing for a source with no lines', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const target = key('email_events-0-1-0000.jsonl.gz');
      const written = await fixture.writer.writeFile(target, []);
      expect(written).toMatchObject({ written: false, lines: 0, bytes: 0 });
      expect(await fixture.read(target)).toBeUndefined();
    });

    it('leaves no object when the source fails before the first part is full', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const target = key('email_events-0-1-0000.jsonl.gz');
      function* failing() {
        yield '{"id":"a"}';
        yield '{"id":"b"}';
        throw new Error('event log read failed');
      }
      await expect(fixture.writer.writeFile(target, failing())).rejects.toThrow('event log read failed');
      expect(await fixture.read(target)).toBeUndefined();
    });

    it('aborts the multipart upload when the source fails midway: no object, nothing pending', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const target = key('email_events-0-1-0002.jsonl.gz');
      async function* failing() {
        yield* noisyLines(PART_SIZE * 1.5);
        throw new Error('event log read failed');
      }

      await expect(fixture.writer.writeFile(target, failing())).rejects.toThrow('event log read failed');

      expect(await fixture.read(target)).toBeUndefined();
      const pending = await fixture.pendingUploads(target);
      if (pending !== undefined) expect(pending).toBe(0);
      else expect(fixture.abortsRequested(target)).toBe(1);
    });

    it('writes a marker', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const target = key('_SUCCESS');
      await fixture.writer.writeMarker(target, '');
      expect((await fixture.read(target))?.length).toBe(0);
      await fixture.writer.writeMarker(target, 'done');
      expect((await fixture.read(target))?.toString()).toBe('done');
    });

    it('throws a classified BucketError when the bucket does not exist', async () => {
      const fixture = await factory({ partSize: PART_SIZE });
      const writer = fixture.missingBucketWriter();
      const fileError = await writer
        .writeFile(key('x.jsonl.gz'), ['{"id":1}'])
        .catch((error: unknown) => error);
      expect(fileError).toBeInstanceOf(BucketError);
      expect(fileError).toMatchObject({
        name: 'BucketNotFound',
        kind: 'permanent',
        reason: 'no_such_bucket',
      });
      const markerError = await writer.writeMarker(key('_SUCCESS'), '').catch((error: unknown) => error);
      expect(markerError).toMatchObject({ name: 'BucketNotFound' });
    });
  });
}
