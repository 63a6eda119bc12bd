import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { Manifest } from '@sluice/core';
import { expect } from 'vitest';
import type { RunRef } from './payloads.js';

/**
 * What the engine's tests read back from the local bucket (s3rver, started by the test global setup) and the
 * key of a run's record. Shared by `engine.test.ts` and `faults.test.ts`.
 */

/** The local s3rver origin the test global setup started. */
export const LOCAL_S3_ENDPOINT = process.env.SLUICE_LOCAL_S3_ENDPOINT as string;
/** The local bucket. */
export const LOCAL_BUCKET = 'local-exports';

const s3 = new S3Client({
  endpoint: LOCAL_S3_ENDPOINT,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});

/** Every data key under `prefix/` (Sluice's own `_sluice/` objects left out), sorted. */
export async function listKeys(prefix: string): Promise<string[]> {
  return (await listAllKeys(prefix)).filter((key) => !key.startsWith(`${prefix}/_sluice/`));
}

/** Deletes `keys` from the local bucket (a test that rewrites files checks they come back). */
export async function deleteKeys(keys: readonly string[]): Promise<void> {
  for (const key of keys) await s3.send(new DeleteObjectCommand({ Bucket: LOCAL_BUCKET, Key: key }));
}

/** The run manifests under `prefix/`, sorted. */
export async function listManifestKeys(prefix: string): Promise<string[]> {
  return (await listAllKeys(prefix)).filter((key) => key.startsWith(`${prefix}/_sluice/manifests/`));
}

/** The schema objects (`_sluice/schema/`) under `prefix/`, sorted. */
export async function listSchemaKeys(prefix: string): Promise<string[]> {
  return (await listAllKeys(prefix)).filter((key) => key.startsWith(`${prefix}/_sluice/schema/`));
}

/** Every key under `prefix/`, sorted. */
async function listAllKeys(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: `${prefix}/`, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) keys.push(object.Key as string);
    token = page.NextContinuationToken;
  } while (token !== undefined);
  return keys.sort();
}

/** The bytes of an object. */
export async function readBytes(key: string): Promise<Buffer> {
  const object = await s3.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: key }));
  return Buffer.from(
    await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
  );
}

/** The lines of a `.jsonl.gz` object (none for a zero-line file). */
export async function readLines(key: string): Promise<string[]> {
  return gunzipSync(await readBytes(key))
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '');
}

/**
 * Checks a manifest (an event window's, or a snapshot's `_SUCCESS`) against the bucket: it lists exactly
 * `dataKeys`, and each file's rows, bytes and SHA-256 are those of the object. Returns the manifest.
 */
export async function expectManifestMatchesBucket(
  manifestKey: string,
  dataKeys: readonly string[],
): Promise<Manifest> {
  const manifest = JSON.parse((await readBytes(manifestKey)).toString('utf8')) as Manifest;
  expect(manifest.files.map((file) => file.key)).toEqual(dataKeys);
  for (const file of manifest.files) {
    const bytes = await readBytes(file.key);
    expect(file).toEqual({
      key: file.key,
      rows: (await readLines(file.key)).length,
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
  }
  expect(manifest.rows).toBe(manifest.files.reduce((sum, file) => sum + file.rows, 0));
  expect(manifest.bytes).toBe(manifest.files.reduce((sum, file) => sum + file.bytes, 0));
  expect(manifest).toMatchObject({ manifest_version: 1, schema_version: 1, format: 'jsonl' });
  return manifest;
}

/** The key of a run's record. */
export function runKeyOf(run: RunRef) {
  return {
    workspaceId: run.workspaceId,
    destinationId: run.destinationId,
    id: run.runId,
    startedAt: run.startedAt,
  };
}
