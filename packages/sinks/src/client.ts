import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { BucketLocation } from '@sluice/core';
import { InvalidInputError } from '@sluice/core';
import { NO_ALLOWED_ENDPOINTS, isAllowListedEndpoint, parseEndpoint, type Resolver } from './endpoint.js';
import { createPinnedLookup } from './lookup.js';
import { DeadlineHttpHandler, UNTIL_PARSED_OPTIONS, untilParsed } from './request-deadline.js';
import { assumeRoleCredentials, type BucketCredentials, isRoleCredentials } from './role.js';

/** The XML API endpoint of Google Cloud Storage, used with HMAC keys. */
export const GCS_ENDPOINT = 'https://storage.googleapis.com';

/**
 * The default total deadline of one bucket request (each attempt of a PutObject, of each multipart part, of
 * every other call): the writers' setting. An 8 MiB part in 30 s needs under 300 KB/s, and three attempts
 * stay well inside the writer Lambda's 4 minutes. The API's connection test sets its own, shorter one.
 */
export const BUCKET_REQUEST_DEADLINE_MS = 30_000;

/** The lookup every bucket connection uses: refuses non-public addresses at connect time. */
const pinnedLookup = createPinnedLookup();

/** Options of {@link createBucketClient}; the defaults are what production uses. */
export interface BucketClientOptions {
  /** Attempts per request, retries included. @default 3 */
  maxAttempts?: number;
  /** @default NO_ALLOWED_ENDPOINTS */
  allowedEndpoints?: ReadonlySet<string>;
  /**
   * Use this origin instead of the provider's, keeping the provider's other settings. For tests that
   * point a GCS-style client at s3rver; it must be allow-listed or pass the endpoint rules.
   */
  endpointOverride?: string;
  /** Milliseconds to establish a connection. @default 5000 */
  connectionTimeout?: number;
  /**
   * Total milliseconds one request may take, answer included, whatever the server trickles; each retry
   * attempt gets its own. @default BUCKET_REQUEST_DEADLINE_MS
   */
  requestDeadlineMs?: number;
  /**
   * The most read of one answer, head included (tests that read objects back). Sluice itself never reads
   * data from a customer's bucket. @default MAX_RESPONSE_BYTES (1 MiB)
   */
  maxResponseBytes?: number;
  /** The resolver behind the pinned lookup (tests). @default the system resolver */
  resolve?: Resolver;
  /** False where no AWS STS can be reached (the local runtime): role credentials then fail at once. @default true */
  assumeRoles?: boolean;
}

/** What {@link bucketClientConfig} decided about a location: where requests go and how they are sent. */
export interface ResolvedBucketEndpoint {
  /** The origin requests go to; undefined for AWS S3 (the SDK's regional endpoint). */
  endpoint: string | undefined;
  region: string;
  /** Not AWS S3: GCS or an S3-compatible store. */
  custom: boolean;
  /** On the allow-list: sent without the pinned lookup (plain http allowed). */
  allowListed: boolean;
}

/**
 * Decides the endpoint and region of a location:
 * - `s3` without endpoint: the AWS regional endpoint of `region`;
 * - `gcs`: `https://storage.googleapis.com`, region `auto`;
 * - `s3` with endpoint: that endpoint (validated by {@link parseEndpoint}), region `auto` unless named.
 */
export function resolveBucketEndpoint(
  location: BucketLocation,
  options: Pick<BucketClientOptions, 'allowedEndpoints' | 'endpointOverride'> = {},
): ResolvedBucketEndpoint {
  const policy = { allowedEndpoints: options.allowedEndpoints ?? NO_ALLOWED_ENDPOINTS };
  let endpoint: string | undefined;
  let region: string;
  if (location.provider === 'gcs') {
    if (location.endpoint !== null) {
      throw new InvalidInputError('An endpoint is not allowed with gcs.', [
        { path: 'endpoint', message: 'An endpoint is not allowed with gcs.' },
      ]);
    }
    endpoint = GCS_ENDPOINT;
    region = 'auto';
  } else if (location.endpoint !== null) {
    endpoint = parseEndpoint(location.endpoint, policy);
    region = location.region || 'auto';
  } else {
    if (!location.region || location.region === 'auto') {
      throw new InvalidInputError('Region is required for Amazon S3 (for example us-east-1).', [
        { path: 'region', message: 'Region is required for Amazon S3 (for example us-east-1).' },
      ]);
    }
    endpoint = undefined;
    region = location.region;
  }
  const custom = endpoint !== undefined;
  if (options.endpointOverride !== undefined) endpoint = parseEndpoint(options.endpointOverride, policy);
  const allowListed = endpoint !== undefined && isAllowListedEndpoint(endpoint, policy.allowedEndpoints);
  return { endpoint, region, custom, allowListed };
}

/** The STS region of a role destination: its bucket's (regional STS endpoint), `us-east-1` for `auto`. */
export function stsRegionOf(resolved: Pick<ResolvedBucketEndpoint, 'region'>): string {
  return resolved.region === 'auto' ? 'us-east-1' : resolved.region;
}

/**
 * The S3 client configuration for a location. Every non-AWS endpoint gets `WHEN_REQUIRED` checksums
 * (R2, GCS and s3rver reject or ignore the SDK's default CRC32 trailers), path-style addressing and
 * region `auto` by default. Every https request goes through the pinned agent; only an allow-listed
 * origin gets a plain handler. Every request has a total deadline and reads at most 1 MiB of each answer
 * ({@link DeadlineHttpHandler}).
 */
export function bucketClientConfig(
  location: BucketLocation,
  credentials: BucketCredentials,
  options: BucketClientOptions = {},
): S3ClientConfig {
  const resolved = resolveBucketEndpoint(location, options);
  const timeouts = {
    connectionTimeout: options.connectionTimeout ?? 5_000,
    socketTimeout: 60_000,
    deadlineMs: options.requestDeadlineMs ?? BUCKET_REQUEST_DEADLINE_MS,
    ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
  };
  // One agent per client (destroying a client destroys its agents' sockets, so they are not shared).
  const requestHandler = resolved.allowListed
    ? new DeadlineHttpHandler({
        ...timeouts,
        httpAgent: new HttpAgent({ keepAlive: true }),
        httpsAgent: new HttpsAgent({ keepAlive: true }),
      })
    : new DeadlineHttpHandler({
        ...timeouts,
        httpsAgent: new HttpsAgent({
          keepAlive: true,
          lookup: options.resolve ? createPinnedLookup({ resolve: options.resolve }) : pinnedLookup,
        }),
      });
  const config: S3ClientConfig = {
    region: resolved.region,
    // A role's keys come from STS on first use and stay in this client's identity cache only.
    credentials: isRoleCredentials(credentials)
      ? assumeRoleCredentials(credentials, {
          region: stsRegionOf(resolved),
          available: options.assumeRoles !== false,
        })
      : { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler,
    followRegionRedirects: false,
  };
  if (resolved.endpoint !== undefined) config.endpoint = resolved.endpoint;
  if (resolved.custom) {
    config.forcePathStyle = true;
    config.requestChecksumCalculation = 'WHEN_REQUIRED';
    config.responseChecksumValidation = 'WHEN_REQUIRED';
  }
  return config;
}

/**
 * Creates the S3 client for a customer's bucket (see {@link bucketClientConfig}). The client holds the
 * credentials; never log it or its config.
 */
export function createBucketClient(
  location: BucketLocation,
  credentials: BucketCredentials,
  options: BucketClientOptions = {},
): S3Client {
  const config = bucketClientConfig(location, credentials, options);
  const client = new S3Client(config);
  // Each attempt's deadline runs until the SDK has parsed the answer.
  client.middlewareStack.add(untilParsed(config.requestHandler as DeadlineHttpHandler), UNTIL_PARSED_OPTIONS);
  return client;
}
