/**
 * Lambda's asynchronous invocation, on this machine: how EventBridge invokes the ingest function in AWS.
 *
 * {@link invokeAsync} runs a handler as Lambda does for an asynchronous event: the first attempt, then
 * `retryAttempts` more when it throws, and, when every attempt failed, an on-failure record (the documented
 * format Lambda sends to an SQS on-failure destination) to the destination. {@link MemoryDeadLetterQueue} is that
 * destination's stand-in: a queue with SQS's receive, hide and delete behaviour, readable by `redriveDeadLetters`.
 */
import { randomUUID } from 'node:crypto';
import {
  type AsyncFailureRecord,
  asyncFailureRecord,
  type DeadLetter,
  type DeadLetterQueue,
} from '@sluice/eventlog';

export type { AsyncFailureRecord };

/** Options of {@link invokeAsync}. */
export interface AsyncInvokeOptions {
  /** Retries after the first attempt (Lambda allows 0-2). @default 2 */
  retryAttempts?: number;
  /** Where the failure record goes when every attempt threw. */
  onFailure: (record: AsyncFailureRecord) => Promise<void>;
  /** Named in the failure record. @default a local placeholder ARN */
  functionArn?: string;
}

/** What an asynchronous invocation came to. */
export type AsyncInvokeOutcome =
  | { status: 'succeeded'; attempts: number; result: unknown }
  | { status: 'failed'; attempts: number; record: AsyncFailureRecord };

/** Invokes `handler` with `event` the way Lambda handles an asynchronous invocation. */
export async function invokeAsync<E>(
  handler: (event: E) => Promise<unknown>,
  event: E,
  options: AsyncInvokeOptions,
): Promise<AsyncInvokeOutcome> {
  const attempts = 1 + (options.retryAttempts ?? 2);
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return { status: 'succeeded', attempts: attempt, result: await handler(event) };
    } catch (error) {
      lastError = error;
    }
  }
  const record = asyncFailureRecord(event, lastError, {
    requestId: randomUUID(),
    functionArn:
      options.functionArn ?? 'arn:aws:lambda:us-east-1:000000000000:function:sluice-local-ingest:$LATEST',
    attempts,
  });
  await options.onFailure(record);
  return { status: 'failed', attempts, record };
}

/**
 * A queue in memory with SQS's semantics as redrive sees them: a received message is hidden until it is
 * deleted or its visibility times out ({@link expireVisibility} makes that happen now).
 */
export class MemoryDeadLetterQueue implements DeadLetterQueue {
  private readonly messages = new Map<string, { body: string; hidden: boolean }>();

  /** Sends a message (its body as SQS would hold it). */
  async send(body: string): Promise<void> {
    this.messages.set(randomUUID(), { body, hidden: false });
  }

  async receive(max: number): Promise<DeadLetter[]> {
    const letters: DeadLetter[] = [];
    for (const [id, message] of this.messages) {
      if (letters.length >= max) break;
      if (message.hidden) continue;
      message.hidden = true;
      letters.push({ id, body: message.body, receiptHandle: id });
    }
    return letters;
  }

  async delete(letter: DeadLetter): Promise<void> {
    this.messages.delete(letter.receiptHandle);
  }

  /** Shows every hidden message again, as when their visibility timeout passes. */
  expireVisibility(): void {
    for (const message of this.messages.values()) message.hidden = false;
  }

  /** Messages in the queue, hidden or not. */
  get size(): number {
    return this.messages.size;
  }
}
