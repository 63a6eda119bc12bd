import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * How the server answers one request:
 * - `headers`: accepts it, then sends the status line and headers one byte at a time, never finishing them;
 * - `body`: sends whole headers (200, a long `Content-Length`), then the body one byte at a time;
 * - `answer`: answers at once, as a minimal S3 would (multipart create, part, complete, abort, put);
 * - `huge` / `huge-error`: answers at once, 200 / 403, with an XML body of `hugeBytes`, sent as fast as the
 *   client reads it.
 */
export type SlowAnswer = 'headers' | 'body' | 'answer' | 'huge' | 'huge-error';

/** A local HTTP server standing in for a bucket host that accepts requests and then trickles bytes. */
export interface SlowBucket {
  /** `http://127.0.0.1:<port>`: allow-list it to reach it through the bucket client. */
  endpoint: string;
  /** `METHOD url` of every request received, in order. */
  requests: string[];
  close(): Promise<void>;
}

const TRICKLED_HEAD = 'HTTP/1.1 200 OK\r\nx-amz-request-id: slow\r\n';

function answerLikeS3(request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? '/', 'http://local');
  const xml = (body: string) => {
    response.writeHead(200, { 'content-type': 'application/xml' });
    response.end(`<?xml version="1.0" encoding="UTF-8"?>${body}`);
  };
  if (request.method === 'POST' && url.searchParams.has('uploads')) {
    xml(
      `<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>${randomBytes(8).toString('hex')}</UploadId></InitiateMultipartUploadResult>`,
    );
  } else if (request.method === 'POST') {
    xml('<CompleteMultipartUploadResult><ETag>"done"</ETag></CompleteMultipartUploadResult>');
  } else if (request.method === 'DELETE') {
    response.writeHead(204).end();
  } else {
    response.writeHead(200, { etag: '"put"' }).end();
  }
}

const HUGE_BYTES = 50 * 1024 * 1024;

/** A `<Error>` (or lifecycle) XML document padded to `bytes`, written chunk by chunk as the socket drains. */
function answerHuge(response: ServerResponse, status: number, bytes: number): void {
  const head =
    status === 200
      ? '<?xml version="1.0" encoding="UTF-8"?><LifecycleConfiguration><Rule><ID>'
      : '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>';
  response.writeHead(status, { 'content-type': 'application/xml', 'content-length': String(bytes) });
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let sent = 0;
  const write = (): void => {
    while (sent < bytes && !response.destroyed) {
      const part = sent === 0 ? Buffer.from(head) : chunk.subarray(0, Math.min(chunk.length, bytes - sent));
      sent += part.length;
      if (!response.write(part)) {
        response.once('drain', write);
        return;
      }
    }
    if (sent >= bytes) response.end();
  };
  write();
}

/**
 * Starts a {@link SlowBucket} on 127.0.0.1. `answerFor` decides, per request, whether it trickles (one byte
 * every `intervalMs`, so the socket is never idle for long) or answers.
 */
export async function startSlowBucket(options: {
  intervalMs: number;
  answerFor: (method: string, url: string) => SlowAnswer;
  /** The body length of a `huge` answer. @default 50 MiB */
  hugeBytes?: number;
}): Promise<SlowBucket> {
  const requests: string[] = [];
  const timers = new Set<NodeJS.Timeout>();

  function trickle(response: ServerResponse, bytes: () => string): void {
    const timer = setInterval(() => {
      if (response.socket?.destroyed ?? true) {
        clearInterval(timer);
        timers.delete(timer);
        return;
      }
      response.socket?.write(bytes());
    }, options.intervalMs);
    timers.add(timer);
  }

  const server = createServer((request, response) => {
    const method = request.method ?? 'GET';
    const url = request.url ?? '/';
    requests.push(`${method} ${url}`);
    request.resume();
    const answer = options.answerFor(method, url);
    if (answer === 'answer') {
      request.on('end', () => answerLikeS3(request, response));
    } else if (answer === 'huge' || answer === 'huge-error') {
      request.on('end', () =>
        answerHuge(response, answer === 'huge' ? 200 : 403, options.hugeBytes ?? HUGE_BYTES),
      );
    } else if (answer === 'headers') {
      // Written on the socket itself: the head never completes, so the client never sees a response.
      let sent = 0;
      trickle(response, () => {
        const next = sent < TRICKLED_HEAD.length ? TRICKLED_HEAD[sent] : 'x';
        sent++;
        return next ?? 'x';
      });
    } else {
      response.writeHead(200, { 'content-length': '100000', etag: '"slow"' });
      response.flushHeaders();
      trickle(response, () => ' ');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const timer of timers) clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
