import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { NodeHttpHandler, type NodeHttpHandlerOptions } from '@smithy/node-http-handler';

/**
 * A bucket request that did not end within its deadline. Named `TimeoutError`, the name the SDK's retry
 * strategy treats as transient, so an attempt that hit its deadline is retried while attempts remain.
 */
export class RequestDeadlineError extends Error {
  override readonly name = 'TimeoutError';

  constructor(readonly deadlineMs: number) {
    super(`No complete answer within ${formatSeconds(deadlineMs)} s`);
  }
}

/**
 * The most Sluice reads of one answer of a customer's endpoint: every answer a bucket gives to Sluice's requests
 * (a put, a part, a lifecycle configuration, an error) is a few KB; a longer one is not read past this.
 */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** The longest response head Node's HTTP client accepts (its default `maxHeaderSize`). */
const MAX_HEAD_BYTES = 16 * 1024;

/** An answer of {@link MAX_RESPONSE_BYTES} or more, head included: reading stopped there and the connection was closed. */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';

  constructor(readonly maxBytes: number) {
    super(`The answer was ${maxBytes} bytes or longer; Sluice stopped reading it.`);
  }
}

/** `1000` → `1`, `1500` → `1.5`: the deadline as people read it. */
export function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

type HandleArgs = Parameters<NodeHttpHandler['handle']>;
type HandleResult = Awaited<ReturnType<NodeHttpHandler['handle']>>;

/** A request in flight: its deadline's timer, and whether it expired. */
interface InFlight {
  timer: NodeJS.Timeout;
  expired: boolean;
}

/**
 * The SDK's `NodeHttpHandler` with a total deadline on every HTTP request it sends and a bound on what it
 * reads of each answer:
 * - connecting, sending the body, receiving the whole answer and the SDK parsing it must fit in `deadlineMs`,
 *   or the request is aborted (before the answer) or its body destroyed, with a {@link RequestDeadlineError}.
 *   The clock stops when {@link DeadlineHttpHandler.settle} is called: the {@link untilParsed} middleware does
 *   it once the SDK has parsed the answer (without it, the clock runs out harmlessly on a finished request).
 *   Each attempt of a retried command gets its own deadline; a caller's `abortSignal` still ends it earlier.
 * - at most `maxResponseBytes` of an answer are read, head (at most 16 KiB) and body, plus the one socket read
 *   (at most 64 KiB) that crossed the bound: the body is then destroyed (the socket closed) with a
 *   {@link ResponseTooLargeError}, so a host cannot make a function buffer a huge body.
 *
 * Why not the handler's own settings (as of @smithy/node-http-handler 4.14): `socketTimeout` is an idle
 * timeout (a server sending a byte every few seconds never trips it); `requestTimeout` runs only until the
 * response headers arrive, and without `throwOnRequestTimeout` it only logs a warning. A server that sends
 * its headers and then trickles the body escapes both; neither counts bytes.
 */
export class DeadlineHttpHandler extends NodeHttpHandler {
  private readonly deadlineMs: number;
  private readonly maxResponseBytes: number;
  private readonly inFlight = new WeakMap<object, InFlight>();

  constructor(options: NodeHttpHandlerOptions & { deadlineMs: number; maxResponseBytes?: number }) {
    const { deadlineMs, maxResponseBytes, ...handlerOptions } = options;
    super(handlerOptions);
    this.deadlineMs = deadlineMs;
    this.maxResponseBytes = maxResponseBytes ?? MAX_RESPONSE_BYTES;
  }

  override async handle(request: HandleArgs[0], options: HandleArgs[1] = {}): Promise<HandleResult> {
    const expired = new RequestDeadlineError(this.deadlineMs);
    const deadline = new AbortController();
    let body: Readable | undefined;
    // Before the answer: abort the request. During its body: destroy the body, so its reader fails. After
    // it, while the SDK parses: remembered, and settle() throws it.
    const state: InFlight = {
      expired: false,
      timer: setTimeout(() => {
        state.expired = true;
        if (body !== undefined) body.destroy(expired);
        else deadline.abort(expired);
      }, this.deadlineMs),
    };
    state.timer.unref();
    this.inFlight.set(request, state);
    const callerSignal = options.abortSignal as AbortSignal | undefined;
    const abortSignal = callerSignal ? AbortSignal.any([callerSignal, deadline.signal]) : deadline.signal;
    let result: HandleResult;
    try {
      result = await super.handle(request, { ...options, abortSignal } as HandleArgs[1]);
    } catch (error) {
      clearTimeout(state.timer);
      this.inFlight.delete(request);
      throw deadline.signal.aborted ? expired : error;
    }
    const responseBody = result.response.body as Readable | undefined;
    if (responseBody && typeof responseBody.pipe === 'function' && !responseBody.destroyed) {
      body = boundedBody(responseBody, this.maxResponseBytes);
      result.response.body = body;
    }
    return result;
  }

  /**
   * Stops the deadline of `request` (the one given to `handle`), and throws the {@link RequestDeadlineError}
   * if it expired meanwhile. Called by {@link untilParsed}; a request never handled is ignored.
   */
  settle(request: object): void {
    const state = this.inFlight.get(request);
    if (state === undefined) return;
    clearTimeout(state.timer);
    this.inFlight.delete(request);
    if (state.expired) throw new RequestDeadlineError(this.deadlineMs);
  }
}

/**
 * `source` read through a counter: when the head and the body read reach `maxBytes`, the counter fails with a {@link ResponseTooLargeError}
 * and the pipeline destroys `source`, which closes the socket. Destroying the returned stream does the same.
 */
function boundedBody(source: Readable, maxBytes: number): Readable {
  // The head, at most Node's 16 KiB, counts too; a socket read beyond the bound is at most 64 KiB.
  const bodyBytes = maxBytes - MAX_HEAD_BYTES;
  let read = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      read += chunk.length;
      if (read > bodyBytes) callback(new ResponseTooLargeError(maxBytes));
      else callback(null, chunk);
    },
  });
  // The reader of `counter` sees its errors; the pipeline's own promise only ends it.
  pipeline(source, counter).catch(() => {});
  return counter;
}

/** Where {@link untilParsed} goes: around the SDK's deserializer, once per attempt. */
export const UNTIL_PARSED_OPTIONS = {
  step: 'deserialize',
  priority: 'high',
  name: 'sluiceDeadlineUntilParsed',
} as const;

/**
 * A middleware that keeps each attempt's deadline running until the SDK has parsed the answer (or failed to),
 * then stops it ({@link DeadlineHttpHandler.settle}): an answer that arrived in time but was still being
 * parsed at the deadline fails with the {@link RequestDeadlineError}. Add it with {@link UNTIL_PARSED_OPTIONS}.
 */
export function untilParsed(handler: DeadlineHttpHandler) {
  return <A extends { request: unknown }, O>(next: (args: A) => Promise<O>) =>
    async (args: A): Promise<O> => {
      let output: O;
      try {
        output = await next(args);
      } catch (error) {
        handler.settle(args.request as object);
        throw error;
      }
      handler.settle(args.request as object);
      return output;
    };
}
