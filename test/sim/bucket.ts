/**
 * The simulation's view of a bucket: every object under a prefix with its bytes' SHA-256 and, for data files,
 * the ids of its rows, read as a customer would (gzip JSON lines with zlib, Parquet with hyparquet). Objects are
 * read again only when their ETag changes.
 */
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { EVENT_DATASETS, type EventDataset, FILE_EXTENSIONS } from '@sluice/core';
import { parquetReadObjects } from 'hyparquet';
import { fileRowId, idColumnsOf } from './model.js';

/** One object as last read. */
export interface BucketObjectView {
  key: string;
  etag: string;
  bytes: number;
  sha256: string;
  /** Row ids of a data file, in file order ({@link fileRowId}); undefined for other objects. */
  ids?: string[];
  /** Parsed JSON of a `.json` object. */
  json?: unknown;
}

/** The extension (`.jsonl.gz`, `.parquet`) a data file's key ends with, from the engine's own list. */
export function dataExtensionOf(key: string): string | undefined {
  return Object.values(FILE_EXTENSIONS).find((extension) => key.endsWith(extension));
}

export class BucketView {
  private readonly cache = new Map<string, BucketObjectView>();

  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  /** Every object under `prefix`, read (or taken from the cache when unchanged). */
  async snapshot(prefix: string): Promise<Map<string, BucketObjectView>> {
    const objects = new Map<string, BucketObjectView>();
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const item of page.Contents ?? []) {
        const key = item.Key ?? '';
        const etag = `${item.ETag ?? ''}:${item.Size ?? 0}`;
        const cached = this.cache.get(key);
        const view = cached?.etag === etag ? cached : await this.read(key, etag);
        this.cache.set(key, view);
        objects.set(key, view);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return objects;
  }

  private async read(key: string, etag: string): Promise<BucketObjectView> {
    const result = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    const bytes = Buffer.from((await result.Body?.transformToByteArray()) ?? []);
    const view: BucketObjectView = {
      key,
      etag,
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
    const extension = dataExtensionOf(key);
    const dataset = datasetOfKey(key) ?? 'email_events';
    if (extension === FILE_EXTENSIONS.jsonl)
      view.ids = jsonLinesIds(gunzipSync(bytes).toString('utf8'), dataset);
    else if (extension === FILE_EXTENSIONS.parquet) view.ids = await parquetIds(bytes, dataset);
    else if (key.endsWith('.json')) view.json = JSON.parse(bytes.toString('utf8'));
    return view;
  }
}

const DATASET_FOLDER = new RegExp(`/(?:v1/schema_type=)?(${EVENT_DATASETS.join('|')})/(?:date=|year=)`);

/** The event dataset of a data file or manifest key, in either layout (`<dataset>/date=`, `schema_type=`). */
export function datasetOfKey(key: string): EventDataset | undefined {
  return DATASET_FOLDER.exec(key)?.[1] as EventDataset | undefined;
}

/** The identity ({@link fileRowId}) of every line of a JSON lines text of `dataset`. */
export function jsonLinesIds(text: string, dataset: EventDataset = 'email_events'): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => fileRowId(dataset, JSON.parse(line) as Record<string, unknown>));
}

async function parquetIds(bytes: Buffer, dataset: EventDataset): Promise<string[]> {
  if (bytes.length === 0) return [];
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
  const rows = (await parquetReadObjects({ file, columns: idColumnsOf(dataset) })) as Record<
    string,
    unknown
  >[];
  return rows.map((row) => fileRowId(dataset, row));
}
