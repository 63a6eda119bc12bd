import type { Readable } from 'node:stream';
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

/** `1000` → `1`, `1500` → `1.5`: the deadline as people read it. */
export function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

type HandleArgs = Parameters<NodeHttpHandler['handle']>;
type HandleResult = Awaited<ReturnType<NodeHttpHandler['handle']>>;

/**
 * The SDK's `NodeHttpHandler` with a total deadline on every HTTP request it sends: connecting, sending the
 * body, and receiving the whole answer, headers and body, must fit in `deadlineMs`, or the request is
 * destroyed with a {@link RequestDeadlineError}. Each attempt of a retried command gets its own deadline;
 * a caller's `abortSignal` still ends the request earlier.
 *
 * Why not the handler's own settings (as of @smithy/node-http-handler 4.14): `socketTimeout` is an idle
 * timeout (a server sending a byte every few seconds never trips it); `requestTimeout` runs only until the
 * response headers arrive, and without `throwOnRequestTimeout` it only logs a warning. A server that sends
 * its headers and then trickles the body escapes both.
 */
export class DeadlineHttpHandler extends NodeHttpHandler {
  private readonly deadlineMs: number;

  constructor(options: NodeHttpHandlerOptions & { deadlineMs: number }) {
    const { deadlineMs, ...handlerOptions } = options;
    super(handlerOptions);
    this.deadlineMs = deadlineMs;
  }

  override async handle(request: HandleArgs[0], options: HandleArgs[1] = {}): Promise<HandleResult> {
    const expired = new RequestDeadlineError(this.deadlineMs);
    const deadline = new AbortController();
    let body: Readable | undefined;
    // Before the answer: abort the request. During its body: destroy the body, so its reader fails.
    const timer = setTimeout(() => {
      if (body !== undefined) body.destroy(expired);
      else deadline.abort(expired);
    }, this.deadlineMs);
    const callerSignal = options.abortSignal as AbortSignal | undefined;
    const abortSignal = callerSignal ? AbortSignal.any([callerSignal, deadline.signal]) : deadline.signal;
    let result: HandleResult;
    try {
      result = await super.handle(request, { ...options, abortSignal } as HandleArgs[1]);
    } catch (error) {
      clearTimeout(timer);
      throw deadline.signal.aborted ? expired : error;
    }
    const responseBody = result.response.body as Readable | undefined;
    if (responseBody && typeof responseBody.once === 'function' && !responseBody.destroyed) {
      body = responseBody;
      responseBody.once('close', () => clearTimeout(timer));
    } else {
      clearTimeout(timer);
    }
    return result;
  }
}
