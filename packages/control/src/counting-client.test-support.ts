import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from './client.js';

/**
 * The module-level document client (DynamoDB Local in tests and benches), counting the calls made through
 * it: for checks that something costs no database call, or how many.
 */
export function countingDocumentClient(): { client: DynamoDBDocumentClient; calls: () => number } {
  let calls = 0;
  const client = {
    send: (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
      calls++;
      return documentClient.send(command);
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, calls: () => calls };
}
