import {
  type AttributeDefinition,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type GlobalSecondaryIndex,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE, type TableSpec } from '@sluice/core';

/** The local table names, one per spec of `@sluice/core`. */
export const LOCAL_TABLE_NAMES = {
  control: 'sluice-control',
  events: 'sluice-events',
  subscribers: 'sluice-subscribers',
} as const;

/** The specs to create, by local table name. */
export const LOCAL_TABLES: { name: string; spec: TableSpec }[] = [
  { name: LOCAL_TABLE_NAMES.control, spec: CONTROL_TABLE },
  { name: LOCAL_TABLE_NAMES.events, spec: EVENTS_TABLE },
  { name: LOCAL_TABLE_NAMES.subscribers, spec: SUBSCRIBERS_TABLE },
];

/** The CreateTable input of a spec: PAY_PER_REQUEST, string keys, every index projecting ALL. */
export function createTableInput(name: string, spec: TableSpec) {
  const attributes = new Set([spec.partitionKey, spec.sortKey]);
  for (const index of spec.globalIndexes) {
    attributes.add(index.partitionKey);
    attributes.add(index.sortKey);
  }
  const attributeDefinitions: AttributeDefinition[] = [...attributes].map((attributeName) => ({
    AttributeName: attributeName,
    AttributeType: 'S',
  }));
  const globalSecondaryIndexes: GlobalSecondaryIndex[] = spec.globalIndexes.map((index) => ({
    IndexName: index.indexName,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' },
      { AttributeName: index.sortKey, KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: 'ALL' },
  }));
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: attributeDefinitions,
    KeySchema: [
      { AttributeName: spec.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: spec.sortKey, KeyType: 'RANGE' as const },
    ],
    ...(globalSecondaryIndexes.length > 0 ? { GlobalSecondaryIndexes: globalSecondaryIndexes } : {}),
  };
}

/**
 * Creates the given tables on a DynamoDB endpoint (in parallel), skipping the ones that exist, and enables TTL
 * where the spec names a TTL attribute.
 */
export async function createLocalTables(
  client: DynamoDBClient,
  tables: { name: string; spec: TableSpec }[] = LOCAL_TABLES,
): Promise<void> {
  await Promise.all(tables.map(({ name, spec }) => createLocalTable(client, name, spec)));
}

async function createLocalTable(client: DynamoDBClient, name: string, spec: TableSpec): Promise<void> {
  let created = false;
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
    try {
      await client.send(new CreateTableCommand(createTableInput(name, spec)));
      created = true;
    } catch (createError) {
      if (!(createError instanceof ResourceInUseException)) throw createError;
    }
    await waitUntilActive(client, name);
  }
  if (created && spec.ttlAttribute) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: spec.ttlAttribute, Enabled: true },
      }),
    );
  }
}

/** Polls DescribeTable every 50 ms until the table is ACTIVE (DynamoDB Local makes it so at once). */
async function waitUntilActive(client: DynamoDBClient, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
      if (Table?.TableStatus === 'ACTIVE') return;
    } catch (error) {
      if ((error as Error).name !== 'ResourceNotFoundException') throw error;
    }
    if (Date.now() > deadline) throw new Error(`Table ${name} is not ACTIVE after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A DynamoDB client for a local endpoint with the local dummy credentials. */
export function localDynamoDbClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}
