import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';

/** The local bucket exports go to. */
export const LOCAL_BUCKET = 'local-exports';
/** s3rver's fixed credentials. */
export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
/** The region local clients use. */
export const LOCAL_REGION = 'us-east-1';

/** Options of {@link startS3Local}. */
export interface S3LocalOptions {
  /** Folder where s3rver keeps the buckets and objects. */
  directory: string;
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default 0
   */
  port?: number;
}

/** A running s3rver, with what a client needs to reach it. */
export interface S3Local {
  /** `http://127.0.0.1:<port>` (use path-style addressing). */
  endpoint: string;
  port: number;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Closes the server and its open connections. Safe to call twice. */
  stop(): Promise<void>;
}

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  httpServer?: Server;
}
type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  configureBuckets: { name: string }[];
}) => S3rverInstance;

const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;

/**
 * Starts s3rver on 127.0.0.1 with the bucket {@link LOCAL_BUCKET} created (kept if it exists).
 *
 * Clients must use `forcePathStyle: true` and `requestChecksumCalculation`/`responseChecksumValidation`
 * `'WHEN_REQUIRED'`; paginated listings need node's `--openssl-legacy-provider` (s3rver hashes continuation
 * tokens with an algorithm newer OpenSSL only offers through it).
 */
export async function startS3Local(options: S3LocalOptions): Promise<S3Local> {
  const directory = resolve(options.directory);
  await mkdir(directory, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port: options.port ?? 0,
    directory,
    silent: true,
    configureBuckets: [{ name: LOCAL_BUCKET }],
  });
  const address = await server.run();
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    port: address.port,
    bucket: LOCAL_BUCKET,
    ...LOCAL_S3_CREDENTIALS,
    region: LOCAL_REGION,
    stop() {
      stopping ??= (async () => {
        const closed = server.close();
        server.httpServer?.closeAllConnections();
        await closed;
      })();
      return stopping;
    },
  };
}
