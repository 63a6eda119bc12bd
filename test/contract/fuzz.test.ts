import { request } from 'node:http';
import { hasEmptyOrDotSegment } from '@sluice/api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordedResponses } from '../helpers/api-client.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { operationFor, validateResponse } from '../helpers/openapi.js';

/**
 * The fuzz suite: property-based requests against the local API over real HTTP (the real authorizer and API
 * handlers on DynamoDB Local, s3rver and the local KMS). Methods, paths, query strings, headers, content types,
 * bodies and sizes are generated; every response must be below 500, JSON, and valid against the OpenAPI
 * document, or, for what API Gateway answers itself (its 403 for a refused key, its 413 over 10 MB), in the
 * gateway's own `{"message"}` shape. Prints the number of cases and the seed (`SLUICE_FUZZ_SEED` replays it;
 * `SLUICE_FUZZ_RUNS` sets the cases of the main property).
 */

const SEED = Number(process.env.SLUICE_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 1_000);

let harness: ContractHarness;
let ws: TestWorkspace;
/** Keys of the workspace: an owner's, a reader's; and the id of an export that exists. */
let ownerKey: string;
let readerKey: string;
let existingId: string;
let cases = 0;
/** Responses by status, for the summary line. */
const statuses = new Map<number, number>();

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
  ownerKey = ws.client.apiKey as string;
  readerKey = (await ws.clientWith({ role: 'member', scopes: ['data_exports:read'] })).apiKey as string;
  const created = await ws.client.post('/data-exports', harness.createBody({ pathPrefix: 'fuzz/existing' }));
  expect(created.status).toBe(201);
  existingId = (created.body as { dataExport: { id: string } }).dataExport.id;
});

afterAll(async () => {
  const leaks = await harness.closeAndFindLeaks();
  // After the capture stops, so the line reaches the test output.
  const byStatus = [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}: ${n}`)
    .join(', ');
  console.log(
    `fuzz suite: ${cases} requests (${byStatus}), seed ${SEED} (SLUICE_FUZZ_SEED=${SEED} replays it)`,
  );
  expect(leaks).toEqual([]);
});

/** One generated request. */
interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** One response, the body read whole. */
interface FuzzResponse {
  status: number;
  contentType: string;
  text: string;
}

/** Sends a request as given (node:http: the path and headers are not normalised the way fetch would). */
function send(url: string, req: FuzzRequest): Promise<FuzzResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    // An explicit length: node frames no body of a DELETE or OPTIONS by itself, and the server would read
    // the bytes as the next request.
    const headers = req.body ? { ...req.headers, 'content-length': String(req.body.length) } : req.headers;
    const outgoing = request(
      { host: hostname, port, method: req.method, path: req.path, headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType: String(response.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

/** What API Gateway answers itself, as `{"message": "..."}`, for these statuses. */
const GATEWAY_STATUSES = new Set([401, 403, 413]);

function isGatewayShape(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).length === 1 &&
    typeof (body as { message?: unknown }).message === 'string'
  );
}

/** Sends the request and checks the response: no 5xx, JSON, valid against the document or the gateway. */
async function check(req: FuzzRequest): Promise<void> {
  cases += 1;
  const response = await send(harness.url, req);
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  recordedResponses.push(response.text);
  const where = `${req.method} ${req.path} (${req.headers['content-type'] ?? 'no content type'}, ${req.body?.length ?? 0} B)`;
  expect(response.status, `${where}: ${response.text.slice(0, 300)}`).toBeLessThan(500);
  if (req.method === 'HEAD' || response.status === 304) return;
  expect(response.contentType, `${where}: ${response.status} ${response.text.slice(0, 300)}`).toMatch(
    /^application\/json/,
  );
  const body = JSON.parse(response.text) as unknown;
  if (GATEWAY_STATUSES.has(response.status) && isGatewayShape(body)) return;
  // A path with an empty or dot segment (a trailing slash included) is no route: its answer is an Error.
  const pathname = req.path.split('?')[0] as string;
  const operationId = hasEmptyOrDotSegment(pathname) ? undefined : operationFor(req.method, pathname);
  try {
    validateResponse(operationId, response.status, body);
  } catch (error) {
    throw new Error(`${where}: ${(error as Error).message}`);
  }
}

// ---- generators ----

const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
});
/** Any text, unicode included, percent-encoded as a path segment. */
const encodedText = fc.string({ unit: 'binary', maxLength: 40 }).map(encodeURIComponent);
/** A raw segment: what a hand-written or hostile client might put in a path. */
const rawSegment = fc.oneof(
  fc.constantFrom('..', '.', '%', '%zz', '%00', '%2F', '%2e%2e', ';', '~', '@', 'exp_', '*', '$'),
  fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@-]{0,20}$/),
);

const idArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant('EXISTING') },
  { weight: 1, arbitrary: fc.stringMatching(/^exp_[0-9a-f]{24}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^exp_[0-9A-Za-z]{0,40}$/) },
  { weight: 1, arbitrary: encodedText },
  { weight: 1, arbitrary: rawSegment },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2_000 }).map((n) => 'a'.repeat(n)) },
);

const routeArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant('/data-exports') },
  { weight: 4, arbitrary: idArb.map((id) => `/data-exports/${id}`) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(idArb, fc.constantFrom('runs', 'test', 'run', 'RUNS', '', 'other'))
      .map(([id, tail]) => `/data-exports/${id}/${tail}`),
  },
  { weight: 1, arbitrary: fc.constant('/openapi.json') },
  {
    weight: 1,
    arbitrary: fc.array(fc.oneof(encodedText, rawSegment), { maxLength: 4 }).map((s) => `/${s.join('/')}`),
  },
);

const pathArb = fc
  .tuple(
    fc.oneof(
      { weight: 12, arbitrary: fc.constant('/api/v1') },
      { weight: 3, arbitrary: fc.constant('/v1') },
      { weight: 3, arbitrary: fc.constantFrom('', '/api/v2', '/API/v1', '/api//v1', '/api/v1/v1') },
    ),
    routeArb,
    fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  )
  .map(([prefix, route, slash]) => `${prefix}${route}${slash ? '/' : ''}`);

const queryValue = fc.oneof(
  fc.integer({ min: -10, max: 1_000 }).map(String),
  fc.constantFrom('', '1e3', '0x10', 'NaN', '-0', '10.5', '99999999999999999999', '%', '%zz'),
  printable.map(encodeURIComponent),
  encodedText,
);
const queryArb = fc.oneof(
  fc.constant(''),
  fc
    .array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom('limit', 'limit', 'cursor', 'status', 'startingAfter', '__proto__'),
          encodedText,
        ),
        queryValue,
      ),
      { maxLength: 4 },
    )
    .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
);

const contentTypeArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/JSON',
      'application/json;charset="UTF-8"',
      'application/json; charset=latin1',
      'application/merge-patch+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      'application/octet-stream',
      'application/xml',
      '*/*',
      '',
    ),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: printable },
);

/** Field values that the validation must refuse or accept cleanly, never crash on. */
const fieldValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.constantFrom(
    null,
    '',
    ' ',
    'http://169.254.169.254',
    'https://127.0.0.1:1',
    'https://[::1]',
    'https://example.invalid',
    's3',
    'gcs',
    'r2',
    'hourly',
    'every_5_minutes',
    '2020-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    -1,
    1e308,
    ['email_events', 'email_events'],
    [],
    {},
  ),
);
const FIELDS = [
  'name',
  'provider',
  'bucket',
  'region',
  'endpoint',
  'pathPrefix',
  'accessKeyId',
  'secretAccessKey',
  'datasets',
  'frequency',
  'format',
  'startFrom',
  'isEnabled',
  'backfill',
];

/** A create or update body: mostly valid, with fields replaced, removed or added. */
const structuredBody = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...FIELDS), fieldValue, { maxKeys: 4 }),
    fc.subarray(FIELDS, { maxLength: 3 }),
    fc.dictionary(fc.oneof(printable, fc.constantFrom('__proto__', 'constructor', 'prototype')), fieldValue, {
      maxKeys: 2,
    }),
  )
  .map(([replaced, removed, extra]) => {
    const overrides: Record<string, unknown> = { ...replaced };
    for (const field of removed) overrides[field] = undefined;
    // Endpoints are left on the local bucket unless replaced, so the connection test stays local.
    const base = harness.createBody({ pathPrefix: 'fuzz/created', ...overrides });
    let text = JSON.stringify(base);
    for (const [key, value] of Object.entries(extra)) {
      // Written into the text: an object literal would drop `__proto__` before it is serialised.
      text = `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}}`;
    }
    return Buffer.from(text);
  });

const bodyArb: fc.Arbitrary<Buffer | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: structuredBody },
  {
    weight: 2,
    arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  },
  { weight: 1, arbitrary: fc.json().map((t) => Buffer.from(`${t.slice(0, Math.max(0, t.length - 1))}`)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2_000 }).map((a) => Buffer.from(a)) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 2_000 })
      .map((depth) => Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
  },
  {
    weight: 1,
    // Around the API's 64 KB limit.
    arbitrary: fc
      .integer({ min: 60 * 1024, max: 70 * 1024 })
      .map((size) => Buffer.from(JSON.stringify({ name: 'x'.repeat(size) }))),
  },
);

const authArb = fc.oneof(
  { weight: 8, arbitrary: fc.constant('OWNER') },
  { weight: 2, arbitrary: fc.constant('READER') },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      printable,
      printable.map((s) => `Bearer ${s}`),
      fc.constantFrom(
        'Bearer',
        'Bearer ',
        'Basic dXNlcjpwYXNz',
        'bearer OWNER',
        'Bearer  OWNER',
        'Bearer OWNERx',
      ),
    ),
  },
);

const extraHeaders = fc.dictionary(
  fc.oneof(
    fc.constantFrom(
      'x-forwarded-for',
      'accept',
      'accept-encoding',
      'if-none-match',
      'origin',
      'x-amz-date',
      'cookie',
    ),
    fc.stringMatching(/^x-[a-z0-9-]{1,20}$/),
  ),
  printable,
  { maxKeys: 3 },
);

const anyRequestArb = fc
  .record({
    method: fc.constantFrom(
      'GET',
      'GET',
      'POST',
      'POST',
      'PATCH',
      'PATCH',
      'DELETE',
      'PUT',
      'OPTIONS',
      'HEAD',
    ),
    path: pathArb,
    query: queryArb,
    contentType: contentTypeArb,
    auth: authArb,
    headers: extraHeaders,
    body: bodyArb,
  })
  .map(({ method, path, query, contentType, auth, headers, body }): FuzzRequest => {
    const all: Record<string, string> = { ...headers };
    const key = (value: string) => value.replace('READER', readerKey).replace('OWNER', ownerKey);
    if (auth === 'OWNER' || auth === 'READER') all.authorization = `Bearer ${key(auth)}`;
    else if (auth !== undefined) all.authorization = key(auth);
    if (contentType !== undefined) all['content-type'] = contentType;
    return {
      method,
      path: `${path.replace('EXISTING', existingId)}${query}`,
      headers: all,
      ...(body !== undefined && method !== 'GET' && method !== 'HEAD' ? { body } : {}),
    };
  });

/** Writes that reach the validation: the owner's key, a JSON content type, a create or update body. */
const writeRequestArb = fc
  .record({
    update: fc.boolean(),
    contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/JSON'),
    body: structuredBody,
  })
  .map(
    ({ update, contentType, body }): FuzzRequest => ({
      method: update ? 'PATCH' : 'POST',
      path: update ? `/api/v1/data-exports/${existingId}` : '/api/v1/data-exports',
      headers: { authorization: `Bearer ${ownerKey}`, 'content-type': contentType },
      body,
    }),
  );

const requestArb = fc.oneof(anyRequestArb, writeRequestArb);

describe('the fuzz suite', () => {
  it('answers every generated request below 500, as the OpenAPI document (or the gateway) says', async () => {
    await fc.assert(fc.asyncProperty(requestArb, check), { seed: SEED, numRuns: RUNS, endOnFailure: true });
  }, 600_000);

  it('answers bodies over 10 MB with the gateway 413, whatever the route', async () => {
    const big = fc.record({
      method: fc.constantFrom('POST', 'PATCH', 'PUT', 'DELETE'),
      path: pathArb,
      size: fc.integer({ min: 10 * 1024 * 1024 + 1, max: 11 * 1024 * 1024 }),
    });
    await fc.assert(
      fc.asyncProperty(big, async ({ method, path, size }) => {
        cases += 1;
        const response = await send(harness.url, {
          method,
          path: path.replace('EXISTING', existingId),
          headers: { authorization: `Bearer ${ownerKey}`, 'content-type': 'application/json' },
          body: Buffer.alloc(size, 0x20),
        });
        expect(response.status).toBe(413);
        expect(JSON.parse(response.text)).toEqual({ message: 'Request Entity Too Large' });
      }),
      { seed: SEED, numRuns: 3 },
    );
  }, 120_000);
});
