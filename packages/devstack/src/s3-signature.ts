/**
 * Signature Version 4 checking for the local bucket. s3rver parses a V4 signature but never verifies it, so a
 * wrong secret would be accepted locally where S3 answers `SignatureDoesNotMatch`. This recomputes the
 * signature of each request with the AWS signing library (`@smithy/signature-v4`, the signer the SDK itself
 * uses) and the secret of the key id it names, and says whether the request may go on to s3rver.
 *
 * Only what decides the signature is read: the method, the raw path and query, the signed headers and the
 * payload hash the client declared (`x-amz-content-sha256`: a hex digest, `UNSIGNED-PAYLOAD` or a
 * `STREAMING-…` marker, signed as given, as S3 does). The body is left unread for s3rver; chunk signatures of
 * `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` bodies and whether a body matches its declared digest are not checked.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Hash } from '@smithy/core/serde';
import { HttpRequest } from '@smithy/core/transport';
import { SignatureV4 } from '@smithy/signature-v4';

/** What a signature check needs of a request. */
export interface SignedRequest {
  method: string;
  /** The request target as received: raw path and query, still percent-encoded. */
  url: string;
  headers: IncomingHttpHeaders;
}

/** An S3 error to answer instead of passing the request on. */
export interface S3ErrorAnswer {
  status: number;
  code: string;
  message: string;
  /** Extra elements of the `<Error>` document, in order. */
  detail: Record<string, string>;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const SHA256_HEADER = 'x-amz-content-sha256';

/** `Credential=<key id>/<yyyymmdd>/<region>/<service>/aws4_request`. */
const CREDENTIAL = /^([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request$/;
/** `yyyymmddThhmmssZ`, the form of `x-amz-date` and `X-Amz-Date`. */
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

interface Claim {
  accessKeyId: string;
  region: string;
  service: string;
  signingDate: Date;
  signedHeaders: string[];
  signature: string;
}

/**
 * Checks the Signature V4 of `request` against the secret `secretFor` gives its key id.
 *
 * @returns `undefined` when the request may go on: its signature matches, or it is not a well-formed V4
 *   request (unsigned, Signature V2, malformed: s3rver answers those), or its key id is unknown (s3rver answers
 *   `InvalidAccessKeyId`); otherwise the 403 `SignatureDoesNotMatch` to answer.
 */
export async function checkSignatureV4(
  request: SignedRequest,
  secretFor: (accessKeyId: string) => string | undefined,
): Promise<S3ErrorAnswer | undefined> {
  const { path, query } = splitTarget(request.url);
  const presigned = query['X-Amz-Algorithm'] !== undefined;
  const claim = presigned ? queryClaim(query) : headerClaim(request.headers);
  if (!claim) return undefined;
  const secretAccessKey = secretFor(claim.accessKeyId);
  if (secretAccessKey === undefined) return undefined;

  const signer = new SignatureV4({
    service: claim.service,
    region: claim.region,
    credentials: { accessKeyId: claim.accessKeyId, secretAccessKey },
    sha256: Hash.bind(null, 'sha256'),
    // S3 signs the path as sent, without encoding it again, and the declared payload hash as given.
    uriEscapePath: false,
    applyChecksum: false,
  });
  const headers = signedHeaderValues(request.headers, claim.signedHeaders);
  const options = {
    signingDate: claim.signingDate,
    signingRegion: claim.region,
    signingService: claim.service,
    signableHeaders: new Set(claim.signedHeaders),
  };
  const url = new HttpRequest({
    method: request.method,
    protocol: 'http:',
    hostname: 'local',
    path,
    headers,
  });
  let expected: string | undefined;
  if (presigned) {
    const { 'X-Amz-Signature': _provided, ...unsigned } = query;
    url.query = unsigned;
    // A presigned request's payload is unsigned; the header only tells the signer so and is not itself signed.
    if (!claim.signedHeaders.includes(SHA256_HEADER)) url.headers[SHA256_HEADER] = UNSIGNED_PAYLOAD;
    const signed = await signer.presign(url, {
      ...options,
      expiresIn: Number(query['X-Amz-Expires']),
      unsignableHeaders: new Set([SHA256_HEADER].filter((name) => !claim.signedHeaders.includes(name))),
      unhoistableHeaders: new Set(Object.keys(url.headers)),
    });
    expected = single(signed.query?.['X-Amz-Signature'] ?? undefined);
  } else {
    url.query = query;
    const signed = await signer.sign(url, options);
    expected = /Signature=([0-9a-f]+)$/.exec(signed.headers.authorization ?? '')?.[1];
  }
  if (expected !== undefined && sameText(expected, claim.signature)) return undefined;
  return {
    status: 403,
    code: 'SignatureDoesNotMatch',
    message:
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    detail: { AWSAccessKeyId: claim.accessKeyId, SignatureProvided: claim.signature },
  };
}

/** The raw path and the decoded query (a repeated name gives an array), as the signer takes them. */
function splitTarget(url: string): { path: string; query: Record<string, string | string[]> } {
  const mark = url.indexOf('?');
  const path = mark === -1 ? url : url.slice(0, mark);
  const query: Record<string, string | string[]> = {};
  if (mark === -1) return { path, query };
  for (const pair of url.slice(mark + 1).split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = decode(equals === -1 ? pair : pair.slice(0, equals));
    const value = equals === -1 ? '' : decode(pair.slice(equals + 1));
    const previous = query[name];
    query[name] = previous === undefined ? value : [...[previous].flat(), value];
  }
  return { path, query };
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function headerClaim(headers: IncomingHttpHeaders): Claim | undefined {
  const authorization = headers.authorization;
  if (!authorization?.startsWith(`${ALGORITHM} `)) return undefined;
  const parts = new Map<string, string>();
  for (const part of authorization.slice(ALGORITHM.length + 1).split(',')) {
    const [name, ...value] = part.trim().split('=');
    if (name) parts.set(name, value.join('='));
  }
  return claimOf(
    parts.get('Credential'),
    single(headers['x-amz-date']),
    parts.get('SignedHeaders'),
    parts.get('Signature'),
  );
}

function queryClaim(query: Record<string, string | string[]>): Claim | undefined {
  if (query['X-Amz-Algorithm'] !== ALGORITHM || !/^\d+$/.test(single(query['X-Amz-Expires']) ?? '')) {
    return undefined;
  }
  return claimOf(
    single(query['X-Amz-Credential']),
    single(query['X-Amz-Date']),
    single(query['X-Amz-SignedHeaders']),
    single(query['X-Amz-Signature']),
  );
}

function claimOf(
  credential: string | undefined,
  amzDate: string | undefined,
  signedHeaders: string | undefined,
  signature: string | undefined,
): Claim | undefined {
  const scope = CREDENTIAL.exec(credential ?? '');
  const date = AMZ_DATE.exec(amzDate ?? '');
  if (!scope || !date || !signedHeaders || !signature) return undefined;
  const [, accessKeyId, , region, service] = scope as unknown as [string, string, string, string, string];
  const [, year, month, day, hour, minute, second] = date.map(Number) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return {
    accessKeyId,
    region,
    service,
    signingDate: new Date(Date.UTC(year, month - 1, day, hour, minute, second)),
    signedHeaders: signedHeaders.toLowerCase().split(';'),
    signature,
  };
}

/** The values of the headers the client says it signed; one it did not send is left out (and fails). */
function signedHeaderValues(headers: IncomingHttpHeaders, names: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined) values[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return values;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** An S3-shaped XML error document; HEAD answers carry none, as on S3. */
export function s3ErrorXml(answer: S3ErrorAnswer, requestId: string): string {
  const elements = { Code: answer.code, Message: answer.message, ...answer.detail, RequestId: requestId };
  const body = Object.entries(elements)
    .map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`)
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${body}</Error>`;
}

function escapeXml(text: string): string {
  return text.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c] as string,
  );
}
