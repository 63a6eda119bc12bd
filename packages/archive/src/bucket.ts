import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  type ListObjectVersionsCommandOutput,
  NoSuchKey,
  NotFound,
  S3Client,
} from '@aws-sdk/client-s3';
import type { BucketLocation, EventDataset } from '@sluice/core';
import { S3BucketWriter, toBucketError, type WrittenFile } from '@sluice/sinks';
import { archiveDatasetPrefix, archiveHourKey, isArchiveHourKeyOf } from './keys.js';

/** Options of {@link createArchiveClient}. */
export interface ArchiveClientOptions {
  /**
   * The local s3rver origin (tests and `npm start` only): path-style requests with s3rver's credentials.
   * @default none: the Lambda's own role, the region's S3 endpoint
   */
  localEndpoint?: string;
  /** @default 'us-east-1' locally, else the SDK's region */
  region?: string;
}

/** s3rver's fixed credentials (`@sluice/devstack` `LOCAL_S3_CREDENTIALS`). */
const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** The S3 client of Sluice's own archive bucket. */
export function createArchiveClient(options: ArchiveClientOptions = {}): S3Client {
  if (options.localEndpoint === undefined) {
    return new S3Client(options.region !== undefined ? { region: options.region } : {});
  }
  return new S3Client({
    endpoint: options.localEndpoint,
    forcePathStyle: true,
    region: options.region ?? 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
}

/** Options of {@link ArchiveBucket}. */
export interface ArchiveBucketOptions {
  /** The archive bucket's name (`SLUICE_ARCHIVE_BUCKET`). */
  bucket: string;
  client: S3Client;
}

/** Keys per DeleteObjects request (S3's limit). */
const DELETE_BATCH = 1_000;

/**
 * Sluice's event archive bucket: one gzipped JSON-lines object per (workspace, dataset, UTC hour), the lines
 * exactly as the hot log stores them, in its order. Writes stream (memory bounded by an upload part), reads
 * stream (one gunzip, line by line).
 */
export class ArchiveBucket {
  readonly bucket: string;
  private readonly client: S3Client;
  private readonly writer: S3BucketWriter;
  private readonly location: BucketLocation;

  constructor(options: ArchiveBucketOptions) {
    if (options.bucket === '') throw new Error('The archive bucket name is required.');
    this.bucket = options.bucket;
    this.client = options.client;
    this.location = {
      provider: 's3',
      bucket: options.bucket,
      region: 'auto',
      endpoint: null,
      pathPrefix: '',
    };
    this.writer = new S3BucketWriter({ location: this.location, client: options.client });
  }

  /** Writes the hour's lines (none: nothing is written). The same lines give the same bytes. */
  writeHour(
    workspaceId: string,
    dataset: EventDataset,
    hourMs: number,
    lines: AsyncIterable<string> | Iterable<string>,
  ): Promise<WrittenFile> {
    return this.writeObject(archiveHourKey(workspaceId, dataset, hourMs), lines);
  }

  /** Writes `lines` to `key` (a source with no lines writes nothing). */
  writeObject(key: string, lines: AsyncIterable<string> | Iterable<string>): Promise<WrittenFile> {
    return this.writer.writeFile(key, lines);
  }

  /** The lines of the hour's object, streamed; none when the hour has no object. */
  readHour(workspaceId: string, dataset: EventDataset, hourMs: number): AsyncGenerator<string> {
    return this.readObject(archiveHourKey(workspaceId, dataset, hourMs));
  }

  /** The lines of an object, streamed; none when it does not exist. */
  async *readObject(key: string): AsyncGenerator<string> {
    let body: Readable;
    try {
      const output = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      body = output.Body as Readable;
    } catch (error) {
      if (error instanceof NoSuchKey) return;
      throw toBucketError(error, this.location);
    }
    const gunzip = body.pipe(createGunzip());
    body.on('error', (error) => gunzip.destroy(error));
    const lines = createInterface({ input: gunzip, crlfDelay: Number.POSITIVE_INFINITY });
    try {
      for await (const line of lines) {
        if (line !== '') yield line;
      }
    } finally {
      lines.close();
      body.destroy();
    }
  }

  /** True when the object exists. */
  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (error instanceof NotFound || error instanceof NoSuchKey) return false;
      throw toBucketError(error, this.location);
    }
  }

  /** The keys under `prefix`, in key order, starting after `startAfter`; stops after `limit` keys. */
  async *listKeys(
    prefix: string,
    startAfter?: string,
    limit = Number.POSITIVE_INFINITY,
  ): AsyncGenerator<string> {
    let token: string | undefined;
    let listed = 0;
    do {
      const output = await this.client
        .send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}),
            ...(Number.isFinite(limit) ? { MaxKeys: Math.min(1_000, limit - listed) } : {}),
          }),
        )
        .catch((error: unknown) => {
          throw toBucketError(error, this.location);
        });
      for (const object of output.Contents ?? []) {
        if (object.Key === undefined) continue;
        yield object.Key;
        listed += 1;
        if (listed >= limit) return;
      }
      token = output.IsTruncated ? output.NextContinuationToken : undefined;
    } while (token);
  }

  /** The hour objects of exactly one workspace and dataset, in time order (never another workspace's). */
  async *listHourKeys(workspaceId: string, dataset: EventDataset): AsyncGenerator<string> {
    for await (const key of this.listKeys(archiveDatasetPrefix(workspaceId, dataset))) {
      if (isArchiveHourKeyOf(key, workspaceId, dataset)) yield key;
    }
  }

  /**
   * Deletes objects with every version the bucket keeps of them (the bucket is versioned: a plain delete or
   * overwrite would leave the old data readable as a noncurrent version). `keepLatest` keeps the current
   * version (a rewritten object) and removes only the older ones.
   */
  async deleteVersions(keys: readonly string[], options: { keepLatest?: boolean } = {}): Promise<number> {
    const targets: { Key: string; VersionId?: string }[] = [];
    for (const key of keys) {
      const versions = await this.versionsOf(key);
      if (versions === undefined) {
        // A store without versioning (s3rver): the object is the only copy.
        if (!options.keepLatest) targets.push({ Key: key });
        continue;
      }
      for (const version of versions) {
        if (options.keepLatest && version.isLatest) continue;
        targets.push({ Key: key, VersionId: version.versionId });
      }
    }
    for (let i = 0; i < targets.length; i += DELETE_BATCH) {
      const batch = targets.slice(i, i + DELETE_BATCH);
      const output = await this.client
        .send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch, Quiet: true } }))
        .catch((error: unknown) => {
          throw toBucketError(error, this.location);
        });
      const failed = output.Errors ?? [];
      if (failed.length > 0) {
        throw new Error(
          `The archive refused to delete ${failed.length} object version(s), first ${failed[0]?.Key}: ${failed[0]?.Message}`,
        );
      }
    }
    return targets.length;
  }

  /** Every version (and delete marker) of exactly `key`, or undefined when the store keeps no versions. */
  private async versionsOf(key: string): Promise<{ versionId: string; isLatest: boolean }[] | undefined> {
    let output: ListObjectVersionsCommandOutput;
    try {
      output = await this.client.send(new ListObjectVersionsCommand({ Bucket: this.bucket, Prefix: key }));
    } catch (error) {
      const name = (error as { name?: unknown }).name;
      if (name === 'NotImplemented' || name === 'MethodNotAllowed') return undefined;
      throw toBucketError(error, this.location);
    }
    const all = [...(output.Versions ?? []), ...(output.DeleteMarkers ?? [])].filter(
      (version) => version.Key === key,
    );
    // A store that answers without version ids keeps no versions.
    if (
      all.length === 0 ||
      all.some((version) => version.VersionId === undefined || version.VersionId === 'null')
    ) {
      return all.length === 0 && !(await this.exists(key)) ? [] : undefined;
    }
    return all.map((version) => ({
      versionId: version.VersionId as string,
      isLatest: version.IsLatest === true,
    }));
  }
}
