import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
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

/** Every key under `prefix/`, sorted. */
export async function listKeys(prefix: string): Promise<string[]> {
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

/** The key of a run's record. */
export function runKeyOf(run: RunRef) {
  return {
    workspaceId: run.workspaceId,
    destinationId: run.destinationId,
    id: run.runId,
    startedAt: run.startedAt,
  };
}
