import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { checkSignatureV4, type S3ErrorAnswer, s3ErrorXml } from './s3-signature.js';

/** The local bucket exports go to. */
export const LOCAL_BUCKET = 'local-exports';
/** The local stand-in of Sluice's own event archive bucket (`SLUICE_ARCHIVE_BUCKET`). */
export const LOCAL_ARCHIVE_BUCKET = 'local-archive';
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
  /**
   * Accept requests signed at any time (s3rver alone refuses a request time more than 15 minutes from its
   * clock): for the simulation (`test/sim/`), whose clients sign with its virtual clock. The signature is still
   * checked, with the time the request claims.
   * @default false
   */
  ignoreClockSkew?: boolean;
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
  /** Creates the buckets of `configureBuckets` (keeps those that exist). */
  configureBuckets(): Promise<void>;
  /** The Koa request handler that `run()` would listen with. */
  callback(): RequestListener;
  logger: { close(): void; exceptions: { unhandle(): void } };
}
type S3rverConstructor = new (options: {
  directory: string;
  silent: boolean;
  configureBuckets: { name: string }[];
}) => S3rverInstance;

const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;

/**
 * Starts s3rver on 127.0.0.1 with the bucket {@link LOCAL_BUCKET} created (kept if it exists), behind a
 * Signature V4 check: a request signed with the right key id and a wrong secret is answered 403
 * `SignatureDoesNotMatch` as S3 would (s3rver alone accepts it); an unknown key id still gets s3rver's
 * `InvalidAccessKeyId`. See `s3-signature.ts`.
 *
 * Clients must use `forcePathStyle: true` and `requestChecksumCalculation`/`responseChecksumValidation`
 * `'WHEN_REQUIRED'`; paginated listings need node's `--openssl-legacy-provider` (s3rver hashes continuation
 * tokens with an algorithm newer OpenSSL only offers through it).
 */
export async function startS3Local(options: S3LocalOptions): Promise<S3Local> {
  const directory = resolve(options.directory);
  await mkdir(directory, { recursive: true });
  const server = new S3rver({
    directory,
    silent: true,
    configureBuckets: [{ name: LOCAL_BUCKET }, { name: LOCAL_ARCHIVE_BUCKET }],
  });
  await server.configureBuckets();
  const s3rverHandler = server.callback();
  const secretFor = (accessKeyId: string) =>
    accessKeyId === LOCAL_S3_CREDENTIALS.accessKeyId ? LOCAL_S3_CREDENTIALS.secretAccessKey : undefined;
  const http = createServer((req, res) => {
    checkSignatureV4(
      { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers },
      secretFor,
    ).then(
      (refusal) => {
        if (refusal) return answerS3Error(req, res, refusal);
        if (options.ignoreClockSkew && req.headers['x-amz-date'] !== undefined) {
          req.headers['x-amz-date'] = new Date().toISOString().replace(/[-:]|\.\d+/g, '');
        }
        return s3rverHandler(req, res);
      },
      () => answerS3Error(req, res, INTERNAL_ERROR),
    );
  });
  await new Promise<void>((resolveListen, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => {
      http.off('error', reject);
      resolveListen();
    });
  });
  const address = http.address() as AddressInfo;
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    port: address.port,
    bucket: LOCAL_BUCKET,
    ...LOCAL_S3_CREDENTIALS,
    region: LOCAL_REGION,
    stop() {
      stopping ??= new Promise<void>((resolveStop, reject) => {
        http.close((error) => {
          // What s3rver's own server does on close.
          server.logger.exceptions.unhandle();
          server.logger.close();
          if (error) reject(error);
          else resolveStop();
        });
        http.closeAllConnections();
      });
      return stopping;
    },
  };
}

const INTERNAL_ERROR: S3ErrorAnswer = {
  status: 500,
  code: 'InternalError',
  message: 'We encountered an internal error. Please try again.',
  detail: {},
};

/** Answers an S3 error once the request body is read (a client still sending it would see a reset instead). */
function answerS3Error(req: IncomingMessage, res: ServerResponse, answer: S3ErrorAnswer): void {
  req.resume();
  if (req.readableEnded) writeS3Error(res, req.method, answer);
  else req.once('end', () => writeS3Error(res, req.method, answer));
}

function writeS3Error(res: ServerResponse, method: string | undefined, answer: S3ErrorAnswer): void {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const body = method === 'HEAD' ? '' : s3ErrorXml(answer, requestId);
  res.writeHead(answer.status, {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body),
    'x-amz-request-id': requestId,
  });
  res.end(body);
}
