/**
 * The local stand-in for the Sluice event bus: an HTTP endpoint that answers EventBridge `PutEvents` (the
 * JSON 1.1 protocol the SDK speaks, `AWS_ENDPOINT_URL_EVENTBRIDGE`), keeps every accepted event in memory
 * and, with a file, appends each as one JSON line. The engine's real publisher talks to it unchanged. No
 * rules run here: the events are only recorded, for `npm start` users to read and for tests to assert on.
 */
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import type { LocalStream } from './stream-local.js';

/** PutEvents takes at most 10 entries a call. */
const MAX_ENTRIES = 10;
/** EventBridge's limit for one request. */
const MAX_BODY_BYTES = 256 * 1024;

/** One event the local bus accepted, as an EventBridge rule would see it. */
export interface LocalBusEvent {
  id: string;
  time: string;
  eventBusName: string;
  source: string;
  detailType: string;
  detail: unknown;
}

/** A rule of the local bus: events of a source prefix and detail-types go to a stream. */
export interface LocalBusRule {
  sourcePrefix: string;
  detailTypes: readonly string[];
  target: LocalStream;
}

/** An accepted event as EventBridge hands it to a target. */
export function targetEvent(event: LocalBusEvent): Record<string, unknown> {
  return {
    version: '0',
    id: event.id,
    'detail-type': event.detailType,
    source: event.source,
    account: '000000000000',
    time: event.time,
    region: 'us-east-1',
    resources: [],
    detail: event.detail,
  };
}

/** Options of {@link startBusLocal}. */
export interface BusLocalOptions {
  /** Rules delivering matching events to streams. @default none */
  rules?: readonly LocalBusRule[];
  /** Port on 127.0.0.1; 0 picks a free one. @default 0 */
  port?: number;
  /** Appends each accepted event here as one JSON line. @default - memory only */
  file?: string;
}

/** A running local bus. */
export interface BusLocal {
  /** `http://127.0.0.1:<port>`, for `AWS_ENDPOINT_URL_EVENTBRIDGE`. */
  endpoint: string;
  port: number;
  /** Every event accepted since the start, oldest first. */
  events(): readonly LocalBusEvent[];
  /** Closes the server. Safe to call twice. */
  stop(): Promise<void>;
}

interface PutEventsEntry {
  EventBusName?: unknown;
  Source?: unknown;
  DetailType?: unknown;
  Detail?: unknown;
  Time?: unknown;
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
  response.end(JSON.stringify(body));
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('request too large'));
        request.destroy();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** The event of one entry, or why EventBridge would refuse it. */
function accept(entry: PutEventsEntry): LocalBusEvent | { ErrorCode: string; ErrorMessage: string } {
  const { Source, DetailType, Detail } = entry;
  if (typeof Source !== 'string' || typeof DetailType !== 'string' || typeof Detail !== 'string') {
    return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Source, DetailType and Detail are required.' };
  }
  let detail: unknown;
  try {
    detail = JSON.parse(Detail);
  } catch {
    return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
  }
  const time =
    typeof entry.Time === 'number'
      ? new Date(entry.Time * 1000).toISOString()
      : typeof entry.Time === 'string'
        ? new Date(entry.Time).toISOString()
        : new Date().toISOString();
  return {
    id: randomUUID(),
    time,
    eventBusName: typeof entry.EventBusName === 'string' ? entry.EventBusName : 'default',
    source: Source,
    detailType: DetailType,
    detail,
  };
}

/** Starts the local bus on 127.0.0.1. */
export async function startBusLocal(options: BusLocalOptions = {}): Promise<BusLocal> {
  const accepted: LocalBusEvent[] = [];
  if (options.file !== undefined) await mkdir(dirname(options.file), { recursive: true });

  const server = createServer((request, response) => {
    void (async () => {
      const target = request.headers['x-amz-target'];
      if (request.method !== 'POST' || target !== 'AWSEvents.PutEvents') {
        reply(response, 400, {
          __type: 'UnknownOperationException',
          message: `The local bus answers PutEvents only, not ${String(target)}.`,
        });
        return;
      }
      let entries: PutEventsEntry[];
      try {
        const body = JSON.parse(await readBody(request)) as { Entries?: unknown };
        if (!Array.isArray(body.Entries) || body.Entries.length === 0 || body.Entries.length > MAX_ENTRIES) {
          throw new Error(`Entries must hold 1-${MAX_ENTRIES} entries.`);
        }
        entries = body.Entries as PutEventsEntry[];
      } catch (error) {
        reply(response, 400, { __type: 'ValidationException', message: (error as Error).message });
        return;
      }
      const results = entries.map(accept);
      const events = results.filter((result): result is LocalBusEvent => 'id' in result);
      accepted.push(...events);
      for (const event of events) {
        for (const rule of options.rules ?? []) {
          if (!event.source.startsWith(rule.sourcePrefix) || !rule.detailTypes.includes(event.detailType))
            continue;
          const workspaceId = (event.detail as { workspaceId?: unknown } | null)?.workspaceId;
          rule.target.put(
            JSON.stringify(targetEvent(event)),
            typeof workspaceId === 'string' ? workspaceId : event.source,
          );
        }
      }
      if (options.file !== undefined && events.length > 0) {
        await appendFile(options.file, events.map((event) => `${JSON.stringify(event)}\n`).join(''));
      }
      reply(response, 200, {
        FailedEntryCount: results.length - events.length,
        Entries: results.map((result) => ('id' in result ? { EventId: result.id } : result)),
      });
    })().catch((error: unknown) => {
      reply(response, 500, { __type: 'InternalException', message: (error as Error).message });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    events: () => [...accepted],
    stop() {
      stopping ??= new Promise((resolve) => server.close(() => resolve()));
      return stopping;
    },
  };
}
