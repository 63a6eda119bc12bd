import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetter, DeadLetterQueue } from './redrive.js';

/** Options of {@link SqsDeadLetterQueue}. */
export interface SqsDeadLetterQueueOptions {
  /** The queue (the stateful stack's `IngestDeadLetterQueueUrl` output). */
  queueUrl: string;
  /** @default a client of the SDK's default configuration (region and credentials from the environment) */
  client?: Pick<SQSClient, 'send'>;
  /**
   * How long a received message stays hidden while it is written, in seconds; a message whose write fails
   * shows again after it. @default 300
   */
  visibilityTimeoutSeconds?: number;
}

/**
 * The ingest dead-letter queue in SQS: short polls (a redrive run ends when the queue shows nothing) and one
 * delete per written message. The operator needs `sqs:ReceiveMessage` and `sqs:DeleteMessage` on the queue.
 */
export class SqsDeadLetterQueue implements DeadLetterQueue {
  private readonly client: Pick<SQSClient, 'send'>;
  private readonly queueUrl: string;
  private readonly visibilityTimeoutSeconds: number;

  constructor(options: SqsDeadLetterQueueOptions) {
    this.client = options.client ?? new SQSClient({});
    this.queueUrl = options.queueUrl;
    this.visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 300;
  }

  async receive(max: number): Promise<DeadLetter[]> {
    const response = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: Math.max(1, Math.min(10, max)),
        VisibilityTimeout: this.visibilityTimeoutSeconds,
        WaitTimeSeconds: 0,
      }),
    );
    return (response.Messages ?? []).flatMap((message) =>
      message.MessageId && message.ReceiptHandle && message.Body !== undefined
        ? [{ id: message.MessageId, body: message.Body, receiptHandle: message.ReceiptHandle }]
        : [],
    );
  }

  async delete(letter: DeadLetter): Promise<void> {
    await this.client.send(
      new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: letter.receiptHandle }),
    );
  }
}
