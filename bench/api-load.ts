import { randomBytes } from 'node:crypto';

/**
 * Load on the local API: for a fixed time per operation, `connections` clients each send one request after
 * another (keep-alive, Node's fetch) to the API that `npm start` runs (the HTTP adapter, the real authorizer
 * and API handlers, DynamoDB Local, s3rver, the local KMS), all in this process. Reported per operation:
 * requests/s, p50 and p99 latency, errors (any status other than the operation's success, or a failed
 * request). The reference, measured in the same run, is `GET /api/v1/openapi.json`: no key, no database, so
 * the ratio shows what the authorizer and the stores cost over the adapter alone.
 */

/** Options of {@link runApiLoadBench}. */
export interface ApiLoadBenchOptions {
  /** Seconds of load per operation. @default 10 */
  seconds?: number;
  /** Clients sending at once. @default 8 */
  connections?: number;
  /** Exports created before the load, for list and get. @default 20 */
  exports?: number;
  log?: (line: string) => void;
}

/** The figures of one operation. */
export interface ApiLoadFigures {
  name: string;
  requests: number;
  errors: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** requests/s over the reference's. */
  ratio: number;
}

/** One operation under load: how to send it and which status is its success. */
interface Operation {
  name: string;
  status: number;
  send: () => Promise<Response>;
}

/** The value at quantile `q` of sorted numbers (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Runs one operation for `seconds` with `connections` clients; every response body is read whole. */
async function load(operation: Operation, seconds: number, connections: number) {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  const client = async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      try {
        const response = await operation.send();
        await response.arrayBuffer();
        if (response.status !== operation.status) errors += 1;
      } catch {
        errors += 1;
      }
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: connections }, client));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    requestsPerSecond: latencies.length / elapsed,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
  };
}

/**
 * Starts the local API on the local services of the environment (`SLUICE_CONTROL_TABLE` and the rest must be
 * set: `bench/run.ts` starts them), makes a workspace, an owner key and `exports` exports, then loads the
 * reference, list, get and create in turn. Asserts nothing about time.
 */
export async function runApiLoadBench(options: ApiLoadBenchOptions = {}): Promise<ApiLoadFigures[]> {
  const seconds = options.seconds ?? 10;
  const connections = options.connections ?? 8;
  const log = options.log ?? ((line: string) => console.log(line));
  // Loaded after the environment is set: these read it at load.
  const [{ ControlStore }, { startApiServer }, s3] = await Promise.all([
    import('@sluice/control'),
    import('@sluice/local'),
    import('@sluice/devstack'),
  ]);
  // The API's access log (one line a request) would drown the figures.
  const silence = silenceStdout();
  const server = await startApiServer({ host: '127.0.0.1', port: 0 });
  try {
    const workspaceId = `ws_load${randomBytes(4).toString('hex')}`;
    const { controlTable } = await import('../test/helpers/tables.js');
    const store = new ControlStore(controlTable);
    await store.ensureWorkspace(workspaceId, 'API load');
    const { apiKey } = await store.createApiKey({ workspaceId, role: 'owner' });
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const api = `${server.url}/api/v1`;
    const createBody = () =>
      JSON.stringify({
        name: 'Load',
        provider: 's3',
        bucket: s3.LOCAL_BUCKET,
        endpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT,
        pathPrefix: `bench-load/${randomBytes(6).toString('hex')}`,
        accessKeyId: s3.LOCAL_S3_CREDENTIALS.accessKeyId,
        secretAccessKey: s3.LOCAL_S3_CREDENTIALS.secretAccessKey,
        datasets: ['email_events'],
        frequency: 'hourly',
      });
    const create = () => fetch(`${api}/data-exports`, { method: 'POST', headers, body: createBody() });
    const ids: string[] = [];
    for (let i = 0; i < (options.exports ?? 20); i++) {
      const response = await create();
      const body = (await response.json()) as { dataExport?: { id: string } };
      if (response.status !== 201 || !body.dataExport)
        throw new Error(`create failed: HTTP ${response.status}`);
      ids.push(body.dataExport.id);
    }
    let next = 0;
    const operations: Operation[] = [
      { name: 'reference: GET /openapi.json', status: 200, send: () => fetch(`${api}/openapi.json`) },
      { name: 'list: GET /data-exports', status: 200, send: () => fetch(`${api}/data-exports`, { headers }) },
      {
        name: 'get: GET /data-exports/{id}',
        status: 200,
        send: () => fetch(`${api}/data-exports/${ids[next++ % ids.length]}`, { headers }),
      },
      { name: 'create: POST /data-exports', status: 201, send: create },
    ];
    silence.restore();
    log(
      `  ${connections} clients, ${seconds} s an operation, ${ids.length} exports in the workspace to start`,
    );
    const figures: ApiLoadFigures[] = [];
    for (const operation of operations) {
      silence.start();
      const measured = await load(operation, seconds, connections);
      silence.restore();
      const reference = figures[0]?.requestsPerSecond ?? measured.requestsPerSecond;
      const f = { name: operation.name, ...measured, ratio: measured.requestsPerSecond / reference };
      figures.push(f);
      log(
        `  ${f.name.padEnd(30)} ${Math.round(f.requestsPerSecond).toLocaleString('en-US').padStart(6)} req/s  ` +
          `p50 ${f.p50Ms.toFixed(1).padStart(6)} ms  p99 ${f.p99Ms.toFixed(1).padStart(6)} ms  ` +
          `${f.errors} errors of ${f.requests.toLocaleString('en-US')}  ${f.ratio.toFixed(2)}x`,
      );
    }
    return figures;
  } finally {
    silence.restore();
    await server.close();
  }
}

/** Swallows what the handlers write to stdout while load runs; `restore` puts it back. */
function silenceStdout(): { start(): void; restore(): void } {
  const write = process.stdout.write.bind(process.stdout);
  const mute = (() => true) as typeof process.stdout.write;
  const control = {
    start: () => {
      process.stdout.write = mute;
    },
    restore: () => {
      process.stdout.write = write;
    },
  };
  control.start();
  return control;
}
