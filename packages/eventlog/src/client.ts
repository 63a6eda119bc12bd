import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/**
 * Builds the low-level DynamoDB client the event log uses. Low level on purpose: items are four flat
 * attributes, and the reader takes the `line` string straight out of `{ S }` without unmarshalling.
 * The endpoint comes from the SDK's own `AWS_ENDPOINT_URL_DYNAMODB` when set.
 */
export function createEventLogClient(
  config: ConstructorParameters<typeof DynamoDBClient>[0] = {},
): DynamoDBClient {
  return new DynamoDBClient({
    requestHandler: new NodeHttpHandler({ connectionTimeout: 2_000, requestTimeout: 30_000 }),
    ...config,
  });
}

let shared: DynamoDBClient | undefined;

/** The one module-level client, created on first use; writers and readers use it unless one is injected. */
export function defaultEventLogClient(): DynamoDBClient {
  shared ??= createEventLogClient();
  return shared;
}

/** Days an event stays in the hot log after it was recorded (TTL); the event archive keeps it after. */
export const DEFAULT_EVENT_RETENTION_DAYS = 35;
const DAY_SECONDS = 86_400;

/** Checks a table name given to a reader or writer; throws when it is missing or empty. */
export function resolveTableName(injected: string | undefined, kind: 'events' | 'subscribers'): string {
  if (typeof injected !== 'string' || injected === '') {
    throw new Error(`The ${kind} table name is required (${kind}Table).`);
  }
  return injected;
}

/**
 * Parses a deployment's event retention, `SLUICE_EVENT_RETENTION_DAYS` (for the functions' config modules):
 * unset or empty is 35 days; otherwise a whole number of days from 1 (the event archive keeps rows after), or
 * it throws. Returns seconds, the writer's unit.
 */
export function parseEventRetentionDays(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_EVENT_RETENTION_DAYS * DAY_SECONDS;
  const days = Number(value);
  if (!Number.isInteger(days) || days < 1) {
    throw new Error(`SLUICE_EVENT_RETENTION_DAYS must be a whole number of days from 1, got "${value}"`);
  }
  return days * DAY_SECONDS;
}

/**
 * Checks a writer's retention in seconds: the injected value (any positive whole number of seconds, so tests
 * can use minutes), else 35 days.
 */
export function resolveRetentionSeconds(injected: number | undefined): number {
  const seconds = injected ?? DEFAULT_EVENT_RETENTION_DAYS * DAY_SECONDS;
  if (!Number.isInteger(seconds) || seconds <= 0) {
    throw new Error(`The event retention must be a positive whole number of seconds, got ${String(seconds)}`);
  }
  return seconds;
}
