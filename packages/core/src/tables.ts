/**
 * The key schema of every DynamoDB table, in one place: the CDK stacks, the local runtime and the stores
 * all read it, so a table is defined once.
 */
export interface TableSpec {
  partitionKey: string;
  sortKey: string;
  /** Number attribute holding epoch seconds after which DynamoDB may delete the item. */
  ttlAttribute?: string;
  globalIndexes: { indexName: string; partitionKey: string; sortKey: string }[];
}

/** Destinations, cursors, leases, runs, workspaces and API keys. */
export const CONTROL_TABLE: TableSpec = {
  partitionKey: 'PK',
  sortKey: 'SK',
  ttlAttribute: 'expiresAt',
  globalIndexes: [{ indexName: 'due', partitionKey: 'dueKey', sortKey: 'dueAt' }],
};

/** Number of partitions of the sparse due index, so the dispatcher's reads spread. */
export const DUE_INDEX_SHARDS = 4;

/** The event log: one item per event, its serialized JSON line in `line`. */
export const EVENTS_TABLE: TableSpec = {
  partitionKey: 'PK',
  sortKey: 'SK',
  ttlAttribute: 'expiresAt',
  globalIndexes: [],
};

/** The current state of every subscriber, one item per subscriber. */
export const SUBSCRIBERS_TABLE: TableSpec = {
  partitionKey: 'PK',
  sortKey: 'SK',
  globalIndexes: [],
};
