/**
 * The conventions every Sluice Lambda shares, on middy: the Lambda context (request id, cold start, function
 * name) on each line of the function's logger, and the keys an invocation appends reset when it ends, whether it
 * returns or throws.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';

/**
 * A Lambda handler as Sluice builds it. The context is optional for callers outside Lambda (tests, the local
 * runtime's HTTP adapter); the local workflows pass one like Lambda's.
 */
export type LambdaFunction<Event, Result> = (event: Event, context?: Partial<Context>) => Promise<Result>;

/**
 * `handler` on middy with `injectLambdaContext(logger, { resetKeys: true })`, then `middlewares` (for example
 * Powertools `logMetrics`). Outside Lambda the context may be empty: the handler gets what the caller passed.
 */
export function lambdaHandler<Event, Result>(
  logger: Logger,
  handler: (event: Event, context: Partial<Context>) => Promise<Result>,
  ...middlewares: MiddlewareObj[]
): LambdaFunction<Event, Result> {
  const wrapped = middy<Event, Result>(handler)
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(middlewares);
  return (event, context = {}) => wrapped(event, context as Context);
}
