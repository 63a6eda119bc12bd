/**
 * The per-row marker (docs/internals.md, "Event log items"; docs/upgrading.md): per workspace, the last recorded
 * time a per-row item can hold. No version from this one on writes per-row items: its writers record, before
 * their first write to a workspace, `PK = <workspaceId>#eventlog`, `SK = per-row-until`, `untilMs` = their clock
 * + {@link PER_ROW_UNTIL_MARGIN_MS}, once (conditional on no marker: the first writer's stays). Readers then
 * query the per-row shards only for hours that can hold a row recorded by `untilMs`; a workspace without a
 * marker (no write since the upgrade) is read as before, shards included.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { HOUR_MS } from './keys.js';

/**
 * How far after a new version's first write an older version may still write a per-row item: a rolling deploy
 * (old functions finish within minutes; an hour allowed) plus the furthest ahead ingestion accepts an explicit
 * `recorded_at` (`MAX_RECORDED_AHEAD_MS`, 24 hours).
 */
export const PER_ROW_UNTIL_MARGIN_MS = 25 * HOUR_MS;

/** The key of a workspace's per-row marker. */
export function perRowMarkerKey(workspaceId: string): Record<string, AttributeValue> {
  return { PK: { S: `${workspaceId}#eventlog` }, SK: { S: 'per-row-until' } };
}

/** Workspaces whose marker this process has seen (`<table>\n<workspaceId>`): one write per process each. */
const recorded = new Set<string>();

/** Records the workspace's marker at `nowMs` + the margin unless one exists (once per process and workspace). */
export async function recordPerRowUntil(
  client: DynamoDBClient,
  tableName: string,
  workspaceId: string,
  nowMs: number,
): Promise<void> {
  const seen = `${tableName}\n${workspaceId}`;
  if (recorded.has(seen)) return;
  try {
    await client.send(
      new PutItemCommand({
        TableName: tableName,
        Item: {
          ...perRowMarkerKey(workspaceId),
          untilMs: { N: String(nowMs + PER_ROW_UNTIL_MARGIN_MS) },
        },
        ConditionExpression: 'attribute_not_exists(PK)',
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
  recorded.add(seen);
}

/** The workspace's marker (`untilMs`), or undefined when none is recorded. */
export async function readPerRowUntil(
  client: DynamoDBClient,
  tableName: string,
  workspaceId: string,
): Promise<number | undefined> {
  const output = await client.send(
    new GetItemCommand({ TableName: tableName, Key: perRowMarkerKey(workspaceId), ConsistentRead: true }),
  );
  const untilMs = output.Item?.untilMs?.N;
  return untilMs === undefined ? undefined : Number(untilMs);
}
