import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '@sluice/control';
import { createEventLogClient } from '@sluice/eventlog';
import type { RuntimeConfig } from '@sluice/local/runtime-config';

/** The operator commands' store options: the configuration's tables, each with a client on its DynamoDB settings. */
export interface OperatorTables {
  control: { tableName: string; client: DynamoDBDocumentClient };
  events: { eventsTable: string; subscribersTable: string; client: DynamoDBClient };
}

/** Store options on the runtime configuration (npm start's DynamoDB Local, or the SDK's own environment). */
export function operatorTables(config: RuntimeConfig): OperatorTables {
  return {
    control: { ...config.tables.control, client: createDocumentClient(config.dynamodb) },
    events: { ...config.tables.events, client: createEventLogClient(config.dynamodb) },
  };
}
