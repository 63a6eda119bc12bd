import { pipeline, type Readable, Transform } from 'node:stream';
import { createGzip } from 'node:zlib';

/** Lines per write to gzip: one write per row is 2.6x slower than batches of about 1,000 (DESIGN.md). */
export const ENCODER_BATCH_LINES = 1_000;
/**
 * The gzip level of every file, chosen by measurement (`npm run bench`, one core, 719-byte email events):
 * level 3 costs about 40% less CPU but every file is 17% larger, for customers to store and move for as
 * long as they keep it; levels 8 and 9 are 6% smaller for 25-30% more CPU, and their longer match chains
 * make that cost depend on how repetitive the rows are. 6 is also zlib's default.
 */
export const GZIP_LEVEL = 6;

/** Counts of one encoded file, final once the output stream has ended. */
export interface EncoderStats {
  lines: number;
  /** UTF-8 bytes of the JSON lines, newlines included. */
  uncompressedBytes: number;
  /** Bytes of gzip output. */
  compressedBytes: number;
}

/** A running encode: read `stream`; `stats` grows as it goes and is final at its `end`. */
export interface JsonlGzipEncoding {
  /** The gzip bytes. Errors with the source's error if the lines iterable throws. */
  stream: Readable;
  readonly stats: EncoderStats;
  /** Resolves with the final stats when the source is fully written to gzip and gzip has ended. */
  done: Promise<EncoderStats>;
}

/**
 * Encodes JSON lines as gzip (level 6): each line is written followed by `\n`, in batches of about
 * {@link ENCODER_BATCH_LINES} joined into one string, not one write per row. It waits for `drain`
 * when gzip's buffer is full, so a slow reader (the upload) holds the source back and memory stays
 * bounded. The output is deterministic: node's zlib writes a gzip header with mtime 0 and no name,
 * so the same lines give the same bytes, and a retried file is byte-identical.
 *
 * @param lines already-serialized JSON lines, without newlines (a line containing one is an error)
 * @param options.level gzip level, for the benchmark's table of levels only; files use {@link GZIP_LEVEL}
 */
export function encodeJsonlGzip(
  lines: AsyncIterable<string> | Iterable<string>,
  options: { batchLines?: number; level?: number } = {},
): JsonlGzipEncoding {
  const batchLines = options.batchLines ?? ENCODER_BATCH_LINES;
  const stats: EncoderStats = { lines: 0, uncompressedBytes: 0, compressedBytes: 0 };
  const gzip = createGzip({ level: options.level ?? GZIP_LEVEL });
  const output = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      stats.compressedBytes += chunk.length;
      callback(null, chunk);
    },
  });
  const done = new Promise<EncoderStats>((resolve, reject) => {
    // pipeline propagates backpressure, and destroys gzip when the reader destroys `output`.
    pipeline(gzip, output, (error) => (error ? reject(error) : resolve({ ...stats })));
  });
  done.catch(() => undefined); // the stream carries the error too; callers may await either

  const write = async (text: string): Promise<void> => {
    if (gzip.destroyed) throw new Error('encodeJsonlGzip: the output was closed');
    stats.uncompressedBytes += Buffer.byteLength(text);
    if (gzip.write(text)) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = (): void => {
        gzip.off('close', onClose);
        resolve();
      };
      const onClose = (): void => {
        gzip.off('drain', onDrain);
        reject(new Error('encodeJsonlGzip: the output was closed'));
      };
      gzip.once('drain', onDrain);
      gzip.once('close', onClose);
    });
  };

  const pump = async (): Promise<void> => {
    let batch: string[] = [];
    for await (const line of lines as AsyncIterable<string>) {
      if (typeof line !== 'string') throw new TypeError('encodeJsonlGzip: every line must be a string');
      if (line.includes('\n')) throw new Error('encodeJsonlGzip: a JSON line must not contain a newline');
      batch.push(line);
      stats.lines += 1;
      if (batch.length >= batchLines) {
        const text = `${batch.join('\n')}\n`;
        batch = [];
        await write(text);
      }
    }
    if (batch.length > 0) await write(`${batch.join('\n')}\n`);
    gzip.end();
  };
  pump().catch((error: unknown) => {
    if (!gzip.destroyed) gzip.destroy(error instanceof Error ? error : new Error(String(error)));
  });

  return { stream: output, stats, done };
}

/** Gzip header bytes 4-7 (MTIME, little-endian); 0 means "no time stamp". */
export function gzipHeaderMtime(bytes: Uint8Array): number {
  if (bytes.length < 10 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) throw new Error('not a gzip stream');
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).readUInt32LE(4);
}
