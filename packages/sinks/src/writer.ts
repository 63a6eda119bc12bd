import type { S3Client } from '@aws-sdk/client-s3';
import type { BucketLocation, Dataset, FileFormat } from '@sluice/core';
import { createBucketClient } from './client.js';
import type { BucketCredentials } from './role.js';
import { encodeJsonlGzip } from './encoder.js';
import { encodeParquet } from './parquet-encoder.js';
import { JSONL_CONTENT_TYPE, PARQUET_CONTENT_TYPE, putSmallObject, uploadStream } from './upload.js';

/** What {@link BucketWriter.writeFile} wrote. */
export interface WrittenFile {
  key: string;
  /** False when the source had no lines: no object is written then. */
  written: boolean;
  lines: number;
  /** Bytes of the object (gzip or Parquet). */
  bytes: number;
  /** Lowercase hex SHA-256 of the object's bytes ('' when nothing was written). */
  sha256: string;
  /** Bytes of the JSON lines before encoding. */
  uncompressedBytes: number;
}

/** Options of {@link BucketWriter.writeFile}. */
export interface WriteFileOptions {
  /** Write a zero-line file when the source has no lines. @default false */
  empty?: boolean;
  /**
   * The file's format; a Parquet file needs its dataset, whose typed columns it has. @default JSON lines, gzip
   */
  format?: { file: FileFormat; dataset: Dataset };
}

/**
 * Writes export files to one customer bucket. The engine depends on this interface only; every provider
 * is served by {@link S3BucketWriter}, and `bucket-writer.contract.ts` is the suite any other
 * implementation must pass.
 */
export interface BucketWriter {
  /**
   * Encodes `lines` (serialized JSON, no newline) as `.jsonl.gz`, or as Parquet when `options.format` says so,
   * and uploads it to `key` (the full
   * object key, path prefix included: see the layout functions of `@sluice/core`). The object appears whole or not at all; a
   * source with no lines writes nothing, unless `options.empty` asks for a valid file of zero lines
   * (the engine overwrites an earlier attempt's leftover file with one). Throws a `BucketError` for bucket
   * failures, or the source's own error if reading the lines failed.
   */
  writeFile(
    key: string,
    lines: AsyncIterable<string> | Iterable<string>,
    options?: WriteFileOptions,
  ): Promise<WrittenFile>;
  /** Writes a small object such as `_SUCCESS`. Throws a `BucketError`. */
  writeMarker(key: string, body: string | Uint8Array): Promise<void>;
}

/** Options of {@link S3BucketWriter}: a client, or the credentials to make one. */
export interface S3BucketWriterOptions {
  location: BucketLocation;
  client?: S3Client;
  credentials?: BucketCredentials;
  /** @default UPLOAD_PART_SIZE */
  partSize?: number;
  /** @default UPLOAD_QUEUE_SIZE */
  queueSize?: number;
}

/** Yields nothing when `lines` is empty, otherwise the first line and then the rest, in one pass. */
async function peek(
  lines: AsyncIterable<string> | Iterable<string>,
): Promise<AsyncIterable<string> | undefined> {
  const iterator =
    Symbol.asyncIterator in lines
      ? (lines as AsyncIterable<string>)[Symbol.asyncIterator]()
      : (lines as Iterable<string>)[Symbol.iterator]();
  const first = await iterator.next();
  if (first.done) return undefined;
  return {
    async *[Symbol.asyncIterator]() {
      let finished = false;
      try {
        yield first.value;
        for (;;) {
          const next = await iterator.next();
          if (next.done) {
            finished = true;
            return;
          }
          yield next.value;
        }
      } finally {
        if (!finished) await iterator.return?.();
      }
    },
  };
}

/** The {@link BucketWriter} for AWS S3, GCS (HMAC) and S3-compatible stores, through one S3 client. */
export class S3BucketWriter implements BucketWriter {
  private readonly client: S3Client;
  private readonly location: BucketLocation;
  private readonly partSize: number | undefined;
  private readonly queueSize: number | undefined;

  constructor(options: S3BucketWriterOptions) {
    if (!options.client && !options.credentials) {
      throw new Error('S3BucketWriter needs a client or credentials');
    }
    this.location = options.location;
    this.client =
      options.client ?? createBucketClient(options.location, options.credentials as BucketCredentials);
    this.partSize = options.partSize;
    this.queueSize = options.queueSize;
  }

  async writeFile(
    key: string,
    lines: AsyncIterable<string> | Iterable<string>,
    options: WriteFileOptions = {},
  ): Promise<WrittenFile> {
    const source = await peek(lines);
    if (source === undefined && options.empty !== true) {
      return { key, written: false, lines: 0, bytes: 0, sha256: '', uncompressedBytes: 0 };
    }
    const format = options.format;
    const encoding =
      format?.file.format === 'parquet'
        ? encodeParquet(source ?? [], { dataset: format.dataset, compression: format.file.compression })
        : encodeJsonlGzip(source ?? []);
    const uploaded = await uploadStream(
      this.client,
      {
        bucket: this.location.bucket,
        key,
        body: encoding.stream,
        contentType: format?.file.format === 'parquet' ? PARQUET_CONTENT_TYPE : JSONL_CONTENT_TYPE,
        encryption: this.location.encryption ?? null,
        ...(this.partSize !== undefined ? { partSize: this.partSize } : {}),
        ...(this.queueSize !== undefined ? { queueSize: this.queueSize } : {}),
      },
      this.location,
    );
    const stats = await encoding.done;
    return {
      key,
      written: true,
      lines: stats.lines,
      bytes: stats.compressedBytes,
      sha256: uploaded.sha256,
      uncompressedBytes: stats.uncompressedBytes,
    };
  }

  async writeMarker(key: string, body: string | Uint8Array): Promise<void> {
    await putSmallObject(
      this.client,
      {
        bucket: this.location.bucket,
        key,
        body,
        contentType: key.endsWith('.json') ? 'application/json' : 'text/plain',
        encryption: this.location.encryption ?? null,
      },
      this.location,
    );
  }
}
