import { randomUUID } from 'node:crypto';
import { CONTROL_TABLE, DUE_INDEX_SHARDS, type Destination, newDestination } from '@sluice/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLocalTables, localDynamoDbClient } from '@sluice/devstack';
import { ControlStore } from './destinations.js';
import { type DueEntry, DueIndex, dueIndexUpdate, dueShard } from './due-index.js';

/** A table of this file only: the due index of the shared table holds every other suite's destinations. */
const tableName = `sluice-control-due-${randomUUID()}`;
const control = new ControlStore({ tableName });
const index = new DueIndex({ tableName });
const NOW = Date.parse('2026-09-30T12:00:00.000Z');
const workspaceId = `ws_${randomUUID()}`;

function destination(overrides: Partial<Destination> = {}): Destination {
  const now = new Date(NOW - 3_600_000);
  return {
    ...newDestination({
      workspaceId,
      id: `exp_${randomUUID().replaceAll('-', '')}`,
      name: 'Lake',
      provider: 's3',
      bucket: 'acme-exports',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: 'sluice',
      accessKeyId: 'AKIAABCDEFGHWXYZ',
      secret: { encryptedDataKey: 'a2V5', iv: 'aXY=', ciphertext: 'Y3Q=', tag: 'dGFn' },
      datasets: ['email_events'],
      frequency: 'every_15_minutes',
      startFrom: now.toISOString(),
      now,
    }),
    ...overrides,
  };
}

const due: Destination[] = [];
const notDue: Destination[] = [];

beforeAll(async () => {
  const dynamo = localDynamoDbClient(process.env.AWS_ENDPOINT_URL_DYNAMODB as string);
  await createLocalTables(dynamo, [{ name: tableName, spec: CONTROL_TABLE }]);
  dynamo.destroy();
  for (let i = 0; i < 60; i++) {
    due.push(destination({ nextRunAt: new Date(NOW - i * 1_000).toISOString() }));
  }
  notDue.push(destination({ nextRunAt: new Date(NOW + 1).toISOString() }));
  notDue.push(destination({ isEnabled: false, nextRunAt: new Date(NOW - 1).toISOString() }));
  await Promise.all([...due, ...notDue].map((d) => control.createDestination(d)));
});

/** Reads every page of `limit`, calling `between` on each page before reading the next. */
async function readAllPages(
  limit: number,
  between: (entries: DueEntry[]) => Promise<void> = async () => undefined,
): Promise<{ entries: DueEntry[]; pages: number }> {
  const entries: DueEntry[] = [];
  let pages = 0;
  let after: string | undefined;
  do {
    const page = await index.queryDuePage(new Date(NOW), { limit, after });
    expect(page.entries.length).toBeLessThanOrEqual(limit);
    pages += 1;
    entries.push(...page.entries);
    await between(page.entries);
    after = page.next;
  } while (after !== undefined);
  return { entries, pages };
}

describe('DueIndex pages', () => {
  it('returns every due destination once, shard by shard and oldest first, in pages of at most the limit', async () => {
    // Act
    const { entries, pages } = await readAllPages(7);

    // Assess
    const ids = entries.map((e) => e.destinationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(due.map((d) => d.id).sort());
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(60 / 7));
    expect(pages).toBeLessThanOrEqual(Math.ceil(60 / 7) + 1);
    const shards = entries.map((e) => dueShard(e.destinationId));
    expect(shards).toEqual([...shards].sort((a, b) => a - b));
    for (let shard = 0; shard < DUE_INDEX_SHARDS; shard++) {
      const times = entries.filter((e) => dueShard(e.destinationId) === shard).map((e) => e.dueAt);
      expect(times).toEqual([...times].sort());
    }
    expect(await index.queryDue(new Date(NOW))).toEqual(entries);
  });

  it('still returns each once when every entry read is marked dispatched before the next page (what Dispatch does)', async () => {
    // Prepare: a second set of due destinations, marked as they are read
    const fresh = Array.from({ length: 20 }, (_, i) =>
      destination({ nextRunAt: new Date(NOW - 500_000 - i).toISOString() }),
    );
    await Promise.all(fresh.map((d) => control.createDestination(d)));
    const freshIds = new Set(fresh.map((d) => d.id));
    const until = new Date(NOW + 360_000).toISOString();

    // Act
    const { entries } = await readAllPages(3, async (page) => {
      for (const entry of page) {
        if (freshIds.has(entry.destinationId)) expect(await index.markDispatched(entry, until)).toBe(true);
      }
    });

    // Assess
    const seen = entries.map((e) => e.destinationId).filter((id) => freshIds.has(id));
    expect(seen.sort()).toEqual([...freshIds].sort());
    const after = await index.queryDue(new Date(NOW));
    expect(after.some((e) => freshIds.has(e.destinationId))).toBe(false);
  });

  it('refuses a token it did not make, with a clear message', async () => {
    for (const after of ['', 'x', '9:2026-01-01T00:00:00.000Z#w#d', '0:no-ids']) {
      await expect(index.queryDuePage(new Date(NOW), { limit: 5, after })).rejects.toThrow(
        /not a due index page token/,
      );
    }
    await expect(index.queryDuePage(new Date(NOW), { limit: 0 })).rejects.toThrow(/positive integer/);
  });
});

describe('dueIndexUpdate', () => {
  it('sets both keys while enabled with a nextRunAt and removes both otherwise', () => {
    const at = '2026-09-30T12:00:00.000Z';
    expect(dueIndexUpdate('w', 'd', { isEnabled: true, nextRunAt: at })).toEqual({
      set: ['dueKey = :dueKey', 'dueAt = :dueAt'],
      remove: [],
      values: { ':dueKey': `DUE#${dueShard('d')}`, ':dueAt': `${at}#w#d` },
    });
    for (const state of [
      { isEnabled: false, nextRunAt: at },
      { isEnabled: true, nextRunAt: null },
    ]) {
      expect(dueIndexUpdate('w', 'd', state)).toEqual({ set: [], remove: ['dueKey', 'dueAt'], values: {} });
    }
  });
});
