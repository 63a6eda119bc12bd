import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BucketLocation, ObjectEncryption } from '@sluice/core';
import { toBucketError } from './classify.js';

/** Part size of multipart uploads: memory per upload is about `partSize * (queueSize + 1)`. */
export const UPLOAD_PART_SIZE = 8 * 1024 * 1024;
/** Parts uploaded at once per file. */
export const UPLOAD_QUEUE_SIZE = 2;
/** The content type of JSON lines files. */
export const JSONL_CONTENT_TYPE = 'application/x-ndjson';
/** The content type of Parquet files. */
export const PARQUET_CONTENT_TYPE = 'application/vnd.apache.parquet';

/** What to upload where. */
export interface UploadStreamInput {
  bucket: string;
  key: string;
  body: Readable;
  /** @default JSONL_CONTENT_TYPE */
  contentType?: string;
  /**
   * Not set by default for `.jsonl.gz`: with `Content-Encoding: gzip` GCS (decompressive transcoding)
   * and some clients hand back the decompressed bytes, so a download would not match the file.
   */
  contentEncoding?: string;
  /** @default UPLOAD_PART_SIZE (at least 5 MiB, the S3 minimum) */
  partSize?: number;
  /** @default UPLOAD_QUEUE_SIZE */
  queueSize?: number;
  /** Server-side encryption, sent on the single PutObject or on CreateMultipartUpload. @default none */
  encryption?: ObjectEncryption | null;
}

/** The S3 request parameters of an {@link ObjectEncryption} (none when absent). */
export function encryptionParams(encryption: ObjectEncryption | null | undefined): {
  ServerSideEncryption?: ObjectEncryption['serverSideEncryption'];
  SSEKMSKeyId?: string;
} {
  if (encryption === undefined || encryption === null) return {};
  return {
    ServerSideEncryption: encryption.serverSideEncryption,
    ...(encryption.serverSideEncryption === 'aws:kms' && encryption.kmsKeyId !== undefined
      ? { SSEKMSKeyId: encryption.kmsKeyId }
      : {}),
  };
}

/** Result of an upload. */
export interface UploadResult {
  key: string;
  etag: string | undefined;
}

/** Result of {@link uploadStream}: also what was uploaded, measured on the way. */
export interface StreamUploadResult extends UploadResult {
  /** Bytes of the object. */
  bytes: number;
  /** Lowercase hex SHA-256 of the object's bytes. */
  sha256: string;
}

/** Passes `body` through unchanged, hashing and counting its bytes (for the run manifests). */
function measured(body: Readable): { stream: Readable; figures: () => { bytes: number; sha256: string } } {
  const hash = createHash('sha256');
  let bytes = 0;
  async function* chunks(): AsyncGenerator<Buffer> {
    for await (const chunk of body) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      hash.update(buffer);
      bytes += buffer.byteLength;
      yield buffer;
    }
  }
  return {
    stream: Readable.from(chunks(), { objectMode: false }),
    figures: () => ({ bytes, sha256: hash.digest('hex') }),
  };
}

/** For the classification messages: which bucket, which provider. Only `bucket` is required. */
type LocationHint = Pick<BucketLocation, 'bucket'> & Partial<BucketLocation>;

function locationOf(hint: LocationHint): BucketLocation {
  return {
    provider: hint.provider ?? 's3',
    bucket: hint.bucket,
    region: hint.region ?? 'auto',
    endpoint: hint.endpoint ?? null,
    pathPrefix: hint.pathPrefix ?? '',
    encryption: hint.encryption ?? null,
  };
}

/**
 * Streams `body` to the bucket with a multipart upload (lib-storage `Upload`, 8 MiB parts, two at a
 * time), so memory is bounded by parts whatever the file size; a body smaller than one part goes as a
 * single PutObject. On any failure (the body errors, a part fails) the multipart upload is aborted
 * (`leavePartsOnError: false`), so no partial object and no pending upload remains; the body is
 * destroyed so its producer stops. The bytes are counted and hashed (SHA-256) on the way. A bucket failure is thrown as a {@link BucketError}; when the body
 * itself failed, its own error is rethrown as is (it is not the bucket's fault).
 *
 * @param location used only to word the error (bucket, provider, endpoint)
 */
export async function uploadStream(
  client: S3Client,
  input: UploadStreamInput,
  location?: LocationHint,
): Promise<StreamUploadResult> {
  let bodyError: unknown;
  const onBodyError = (error: unknown): void => {
    // lib-storage stops iterating the body when a part fails, and Node then destroys the stream with an
    // ABORT_ERR: a consequence of the bucket's failure, not a failure of the source.
    if ((error as { code?: unknown }).code === 'ABORT_ERR') return;
    bodyError ??= error;
  };
  input.body.on('error', onBodyError);
  const body = measured(input.body);
  const upload = new Upload({
    client,
    params: {
      Bucket: input.bucket,
      Key: input.key,
      Body: body.stream,
      ContentType: input.contentType ?? JSONL_CONTENT_TYPE,
      ...(input.contentEncoding !== undefined ? { ContentEncoding: input.contentEncoding } : {}),
      ...encryptionParams(input.encryption),
    },
    partSize: input.partSize ?? UPLOAD_PART_SIZE,
    queueSize: input.queueSize ?? UPLOAD_QUEUE_SIZE,
    leavePartsOnError: false,
  });
  try {
    const result = await upload.done();
    return { key: input.key, etag: result.ETag, ...body.figures() };
  } catch (error) {
    if (!body.stream.destroyed) body.stream.destroy();
    if (!input.body.destroyed) input.body.destroy();
    // The source failed (the event log, a bad line): that error, not a bucket error, is the news.
    if (bodyError !== undefined) throw bodyError;
    throw toBucketError(error, locationOf(location ?? { bucket: input.bucket }));
  } finally {
    input.body.off('error', onBodyError);
  }
}

/**
 * Writes a small object in one PutObject: markers such as `_SUCCESS` and the connection-test file.
 *
 * @throws BucketError
 */
export async function putSmallObject(
  client: S3Client,
  input: {
    bucket: string;
    key: string;
    body: string | Uint8Array;
    contentType?: string;
    /** Ends the call, retries included, when it aborts. */
    abortSignal?: AbortSignal;
    /** Server-side encryption of the object. @default none */
    encryption?: ObjectEncryption | null;
  },
  location?: LocationHint,
): Promise<UploadResult> {
  try {
    const result = await client.send(
      new PutObjectCommand({
        Bucket: input.bucket,
        Key: input.key,
        Body: input.body,
        ContentLength: typeof input.body === 'string' ? Buffer.byteLength(input.body) : input.body.byteLength,
        ContentType: input.contentType ?? 'application/octet-stream',
        ...encryptionParams(input.encryption),
      }),
      input.abortSignal ? { abortSignal: input.abortSignal } : {},
    );
    return { key: input.key, etag: result.ETag };
  } catch (error) {
    throw toBucketError(error, locationOf(location ?? { bucket: input.bucket }));
  }
}
