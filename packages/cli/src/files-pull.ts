/**
 * `sluice files pull --export <id> --to <dir>`: copies an export's objects (data, manifests, schema) from its
 * bucket into a folder, each under its own key, so the documented DuckDB queries work on a local copy. Locally
 * this is the way to read the files at all: s3rver stores an object as `<key>._S3rver_object` on disk, which no
 * glob of the docs matches. The export's bucket and prefix come from the API; the objects are read with the
 * S3 API: with the local bucket's credentials of `npm start` (`.sluice/local.json`) when the export writes to
 * that bucket, else with the AWS SDK's own credentials (the environment, a profile): Sluice's key for the
 * export writes only and is never returned.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { LOCAL_JSON, type LocalJson, readJsonFile } from '@sluice/local/runtime-config';
import type { DataExportView } from './api-client.js';
import { UsageError } from './context.js';

/** What was copied. */
export interface PullResult {
  /** The folder the keys are under. */
  to: string;
  /** The export's prefix inside it (`''` for the bucket root). */
  prefix: string;
  objects: number;
  bytes: number;
}

/** The local path of `key` under `to`; refuses a key that would leave it (`..`). */
export function localPathOf(to: string, key: string): string {
  // A key's leading slashes (legal in S3) name no root: `/a` goes to `<to>/a`.
  const path = resolve(to, key.replace(/^\/+/, ''));
  const inside = relative(resolve(to), path);
  if (key === '' || inside === '' || inside.startsWith('..') || isAbsolute(inside) || key.includes('\\')) {
    throw new UsageError(`The object key ${JSON.stringify(key)} is not a path inside ${to}; not copied.`);
  }
  return path;
}

/** Copies every object under `prefix/` (the whole bucket for `''`) into `to`, each under its own key. */
export async function pullObjects(
  client: S3Client,
  bucket: string,
  prefix: string,
  to: string,
): Promise<PullResult> {
  const result: PullResult = { to, prefix, objects: 0, bytes: 0 };
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        ...(prefix !== '' ? { Prefix: `${prefix}/` } : {}),
        ContinuationToken: token,
      }),
    );
    for (const object of page.Contents ?? []) {
      const key = object.Key as string;
      if (key.endsWith('/')) continue;
      const path = localPathOf(to, key);
      const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const bytes = await (
        answer.Body as { transformToByteArray(): Promise<Uint8Array> }
      ).transformToByteArray();
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, bytes);
      result.objects += 1;
      result.bytes += bytes.length;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return result;
}

/** An S3 client that reads the export's bucket: the local bucket's keys when it is `npm start`'s. */
export function readerFor(view: DataExportView, localJsonFile: string = LOCAL_JSON): S3Client {
  const local = readJsonFile<LocalJson>(localJsonFile);
  const isLocal = local?.s3 !== undefined && view.endpoint !== null && view.endpoint === local.s3.endpoint;
  return new S3Client({
    region: view.region === 'auto' ? 'us-east-1' : view.region,
    ...(view.endpoint !== null ? { endpoint: view.endpoint, forcePathStyle: true } : {}),
    ...(view.provider === 'gcs' ? { endpoint: 'https://storage.googleapis.com' } : {}),
    ...(isLocal && local
      ? { credentials: { accessKeyId: local.s3.accessKeyId, secretAccessKey: local.s3.secretAccessKey } }
      : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
