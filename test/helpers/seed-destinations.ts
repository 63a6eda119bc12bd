import { randomBytes } from 'node:crypto';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { destinationItem } from '@sluice/control';
import { type Destination, newDestination } from '@sluice/core';

/**
 * Seeding many destinations fast, for the Dispatch test and bench: the items `ControlStore.createDestination`
 * would put, written with BatchWriteItem (25 a call, several calls at once) instead of one PutItem each.
 */

/** `count` destinations with a queued manual run, due since `dueAt` (nothing to read to decide to start them). */
export function queuedDestinations(count: number, workspaceId: string, dueAt: Date): Destination[] {
  return Array.from({ length: count }, (_, i) => ({
    ...newDestination({
      workspaceId,
      id: `exp_${i.toString().padStart(6, '0')}_${randomBytes(4).toString('hex')}`,
      name: `Lake ${i}`,
      provider: 's3',
      bucket: 'acme-exports',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: `seed/${i}`,
      accessKeyId: 'AKIAABCDEFGHWXYZ',
      // Never opened: no ExportRun runs for a seeded destination.
      secret: { encryptedDataKey: 'a2V5', iv: 'aXY=', ciphertext: 'Y3Q=', tag: 'dGFn' },
      datasets: ['email_events'],
      frequency: 'every_15_minutes',
      startFrom: dueAt.toISOString(),
      now: dueAt,
    }),
  }));
}

/** Batch-writes the destinations' items; unprocessed items are sent again after a short pause. */
export async function seedDestinations(
  client: DynamoDBDocumentClient,
  tableName: string,
  destinations: readonly Destination[],
  callsAtOnce = 8,
): Promise<void> {
  const chunks: Record<string, unknown>[][] = [];
  for (let i = 0; i < destinations.length; i += 25) {
    chunks.push(destinations.slice(i, i + 25).map((d) => destinationItem(d)));
  }
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < chunks.length) {
      let requests = (chunks[next++] ?? []).map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt === 10) throw new Error(`${requests.length} destination items left unprocessed`);
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
        const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
        requests = (result.UnprocessedItems?.[tableName] ?? []) as typeof requests;
      }
    }
  };
  await Promise.all(Array.from({ length: callsAtOnce }, worker));
}
