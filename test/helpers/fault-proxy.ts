import {
  request as httpRequest,
  createServer,
  type IncomingMessage,
  type IncomingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A fault-injecting HTTP proxy for the fault suite: it stands between the SDK and a local service (s3rver or
 * DynamoDB Local) and, for a seeded random share of the requests, answers as a failing AWS service would
 * instead of (or while) forwarding them.
 */

/** What the proxy can do to one request. */
export type FaultKind =
  /** `500` in the service's error shape, the request never forwarded. */
  | 'internal_error'
  /** S3 `503 SlowDown`; DynamoDB `400 ProvisionedThroughputExceededException` or `ThrottlingException`. */
  | 'throttle'
  /** The connection is destroyed while the request body is still arriving: the service never sees it. */
  | 'reset_request'
  /**
   * The request is forwarded (the service acts on it), then the connection is destroyed mid-response: after
   * the headers and half the body, or before the headers when the body is empty.
   */
  | 'reset_response'
  /** The request waits before it is forwarded (shorter than the clients' timeouts). */
  | 'stall_before'
  /** The response pauses after half its body, then completes. */
  | 'stall_mid_body';

export const FAULT_KINDS: readonly FaultKind[] = [
  'internal_error',
  'throttle',
  'reset_request',
  'reset_response',
  'stall_before',
  'stall_mid_body',
];

/** The faults that fail a request (the others only delay it). */
const FAILURE_KINDS: readonly FaultKind[] = ['internal_error', 'throttle', 'reset_request', 'reset_response'];

/** Which service's error shape the proxy speaks. */
export type ProxiedService = 's3' | 'dynamodb';

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** The origin requests are forwarded to, e.g. `http://127.0.0.1:4569`. */
  target: string;
  service: ProxiedService;
  /** Uniform in [0, 1): the proxy's only source of chance, so a seed reproduces its decisions. */
  random: () => number;
  /** Share of requests that get a fault while faults are on. */
  rate: number;
  /**
   * At most this many requests in a row pass clean: the next one gets a fault whatever the draw, so a service
   * called only a few times (a bucket taking a handful of files) still meets faults. @default no limit
   */
  maxCleanRun?: number;
  /**
   * After a fault, the chance that the next `length` requests get one too: a burst outlasts the SDK's own
   * retries, so the error reaches the handler and the workflow's Retry and Catch. @default no bursts
   */
  burst?: { chance: number; length: number };
  /** Longest stall in ms; keep it below every client timeout so that a stall delays and never fails. */
  maxStallMs: number;
}

/** A running proxy. */
export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: point the client here. */
  endpoint: string;
  /** Off: every request passes untouched (seeding, reading back). On: faults at the configured rate. */
  faultsOn: boolean;
  /** Requests seen while faults were on. */
  requests: number;
  /** Requests seen while faults were on, by operation (DynamoDB's `X-Amz-Target` action, else the method). */
  operations: Map<string, number>;
  /** Bursts started. */
  bursts: number;
  /** Faults injected, by kind. */
  injected: Record<FaultKind, number>;
  /** Total faults injected. */
  totalInjected(): number;
  close(): Promise<void>;
}

const DYNAMODB_ERROR_PREFIX = 'com.amazonaws.dynamodb.v20120810#';

/** An error answer in the service's own shape (S3 XML, DynamoDB JSON 1.0). */
function errorAnswer(
  service: ProxiedService,
  kind: 'internal_error' | 'throttle',
  random: () => number,
): { status: number; headers: Record<string, string>; body: string } {
  if (service === 's3') {
    const [status, code, message] =
      kind === 'throttle'
        ? [503, 'SlowDown', 'Please reduce your request rate.']
        : [500, 'InternalError', 'We encountered an internal error. Please try again.'];
    return {
      status,
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>FAULTPROXY</RequestId></Error>`,
    };
  }
  const [status, type, message] =
    kind === 'throttle'
      ? random() < 0.5
        ? [
            400,
            'ProvisionedThroughputExceededException',
            'The level of configured provisioned throughput for the table was exceeded.',
          ]
        : [400, 'ThrottlingException', 'Rate of requests exceeds the allowed throughput.']
      : [500, 'InternalServerError', 'Internal server error'];
  return {
    status,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'FAULTPROXY' },
    body: JSON.stringify({ __type: `${DYNAMODB_ERROR_PREFIX}${type}`, message }),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads a whole request body. */
function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/** Forwards a request to the target; resolves with the whole response. */
function forward(
  target: URL,
  req: IncomingMessage,
  body: Buffer,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        // The host header is kept: the client signed it, and s3rver checks the signature.
        headers: req.headers,
      },
      (response) => {
        readAll(response).then(
          (data) => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: data }),
          reject,
        );
      },
    );
    upstream.on('error', reject);
    upstream.end(body);
  });
}

/**
 * Starts a proxy on 127.0.0.1 in front of `target`. While {@link FaultProxy.faultsOn} is true each request
 * draws one number to decide whether it gets a fault, and more to choose which and where; every decision comes
 * from `random`, so the same seed gives the same sequence of decisions (which request meets which decision
 * still depends on the order concurrent requests arrive in).
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  const { random } = options;
  const sockets = new Set<Socket>();
  const injected = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
  const proxy: FaultProxy = {
    endpoint: '',
    faultsOn: false,
    requests: 0,
    operations: new Map(),
    bursts: 0,
    injected,
    totalInjected: () => Object.values(injected).reduce((a, b) => a + b, 0),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  let cleanRun = 0;
  let burstLeft = 0;
  const chooseFault = (): FaultKind | undefined => {
    if (!proxy.faultsOn) return undefined;
    proxy.requests += 1;
    const inBurst = burstLeft > 0;
    if (inBurst) burstLeft -= 1;
    const fault = inBurst || random() < options.rate || cleanRun >= (options.maxCleanRun ?? Infinity);
    if (!fault) {
      cleanRun += 1;
      return undefined;
    }
    cleanRun = 0;
    if (!inBurst && options.burst && random() < options.burst.chance) {
      burstLeft = options.burst.length;
      proxy.bursts += 1;
    }
    // A burst is of failures: a stall only delays, and would let the SDK's retry through.
    const kinds = inBurst ? FAILURE_KINDS : FAULT_KINDS;
    return kinds[Math.floor(random() * kinds.length)];
  };
  const stallMs = () => Math.floor(options.maxStallMs / 4 + random() * ((options.maxStallMs * 3) / 4));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (proxy.faultsOn) {
      const target = req.headers['x-amz-target'];
      const operation =
        typeof target === 'string' ? (target.split('.').at(-1) ?? target) : (req.method ?? '');
      proxy.operations.set(operation, (proxy.operations.get(operation) ?? 0) + 1);
    }
    const fault = chooseFault();
    if (fault !== undefined) injected[fault] += 1;
    if (fault === 'reset_request') {
      // Wait for the first bytes of the body (if any), then drop the connection.
      await new Promise<void>((resolve) => {
        req.once('data', () => resolve());
        req.once('end', () => resolve());
      });
      req.socket.destroy();
      return;
    }
    const body = await readAll(req);
    if (fault === 'internal_error' || fault === 'throttle') {
      const answer = errorAnswer(options.service, fault, random);
      res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) });
      res.end(answer.body);
      return;
    }
    if (fault === 'stall_before') await sleep(stallMs());
    const response = await forward(target, req, body);
    const headers = { ...response.headers };
    delete headers['transfer-encoding'];
    headers['content-length'] = String(response.body.length);
    if (fault === 'reset_response') {
      if (response.body.length > 0) {
        res.writeHead(response.status, headers);
        res.write(response.body.subarray(0, Math.floor(response.body.length / 2)));
        // Let the partial body leave before the connection drops.
        await sleep(20);
      }
      res.socket?.destroy();
      return;
    }
    res.writeHead(response.status, headers);
    if (fault === 'stall_mid_body' && response.body.length > 1) {
      const half = Math.floor(response.body.length / 2);
      res.write(response.body.subarray(0, half));
      await sleep(stallMs());
      res.end(response.body.subarray(half));
      return;
    }
    res.end(response.body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) {
        res.writeHead(502);
        res.end();
      } else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
