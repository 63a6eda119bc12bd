import { randomUUID } from 'node:crypto';
import { paginateQuery, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type ErasureEntry, type ErasureLog, erasureHash, erasurePhone } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { workspacePk } from './items.js';

/** `ERASURE#`: the sort key prefix of a workspace's erasure records. */
const ERASURE_SK_PREFIX = 'ERASURE#';

/** What an erasure removes, in plain identifiers (hashed before they are stored). */
export type ErasureRecordInput =
  | { kind: 'all' }
  | {
      kind: 'person';
      subscriberIds: Iterable<string>;
      emails: Iterable<string>;
      /** Phone numbers (hashed in E.164: `erasurePhone`) and contact ids: the second product's people. */
      phones?: Iterable<string>;
      contactIds?: Iterable<string>;
    };

/**
 * The erasure log in the control table (`WS#<workspaceId>` / `ERASURE#<erasedAt ISO>#<uuid>`: `kind`,
 * `erasedAtMs`, `subscriberIdHashes`, `emailHashes`). `sluice erase` records an erasure before it deletes
 * anything, so `events redrive` can leave out what the ingest dead-letter queue still holds of the person (or
 * of the workspace) and a later redrive never writes erased data back. Only hashes of the identifiers are kept
 * (`erasureHash` of `@sluice/core`). Kept without expiry: the workspace's record of its erasures.
 */
export class ErasureLogStore implements ErasureLog {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /** Records an erasure at `now`. */
  async record(
    workspaceId: string,
    input: ErasureRecordInput,
    now: Date = new Date(),
  ): Promise<ErasureEntry> {
    const entry: { -readonly [K in keyof ErasureEntry]: ErasureEntry[K] } = {
      erasedAtMs: now.getTime(),
      kind: input.kind,
      subscriberIdHashes:
        input.kind === 'all'
          ? []
          : [...new Set(input.subscriberIds)].map((id) => erasureHash(workspaceId, 'subscriber', id)),
      emailHashes:
        input.kind === 'all'
          ? []
          : [...new Set([...input.emails].map((email) => email.toLowerCase()))].map((email) =>
              erasureHash(workspaceId, 'email', email),
            ),
    };
    if (input.kind === 'person') {
      const phones = [...new Set([...(input.phones ?? [])].map(erasurePhone))];
      const contactIds = [...new Set(input.contactIds ?? [])];
      // Only when there are some: an erasure by subscriber or e-mail keeps the item it always had.
      if (phones.length > 0)
        entry.phoneHashes = phones.map((phone) => erasureHash(workspaceId, 'phone', phone));
      if (contactIds.length > 0)
        entry.contactIdHashes = contactIds.map((id) => erasureHash(workspaceId, 'contact', id));
    }
    await withDynamoErrors(() =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.tableName,
          Item: {
            PK: workspacePk(workspaceId),
            SK: `${ERASURE_SK_PREFIX}${now.toISOString()}#${randomUUID()}`,
            ...entry,
          },
        }),
      ),
    );
    return entry;
  }

  /** Every erasure of the workspace, oldest first. */
  async erasuresOf(workspaceId: string): Promise<ErasureEntry[]> {
    const entries: ErasureEntry[] = [];
    const pages = paginateQuery(
      { client: this.table.client },
      {
        TableName: this.table.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':prefix': ERASURE_SK_PREFIX },
        ProjectionExpression:
          'erasedAtMs, #kind, subscriberIdHashes, emailHashes, phoneHashes, contactIdHashes',
        ExpressionAttributeNames: { '#kind': 'kind' },
        ConsistentRead: true,
      },
    );
    await withDynamoErrors(async () => {
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          entries.push({
            erasedAtMs: Number(item.erasedAtMs),
            kind: item.kind === 'all' ? 'all' : 'person',
            subscriberIdHashes: (item.subscriberIdHashes as string[] | undefined) ?? [],
            emailHashes: (item.emailHashes as string[] | undefined) ?? [],
            ...(item.phoneHashes ? { phoneHashes: item.phoneHashes as string[] } : {}),
            ...(item.contactIdHashes ? { contactIdHashes: item.contactIdHashes as string[] } : {}),
          });
        }
      }
    });
    return entries;
  }
}
