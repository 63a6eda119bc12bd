import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { controlTable } from '../../../test/helpers/tables.js';
import { DynamoRejectedEvents, type StoredRejection } from './rejected.js';

describe('DynamoRejectedEvents', () => {
  it('keeps a full bus event with thousands of reasons under the item size limit, counting the reasons left out', async () => {
    // Prepare: a 250 KB bus event whose 3,000 rows were all refused
    const store = new DynamoRejectedEvents(controlTable);
    const workspaceId = `ws_${randomUUID()}`;
    const reasons = Array.from(
      { length: 3_000 },
      (_, i) => `events[${i}]: ${'occurred_at: must be a time '.repeat(3)}`,
    );
    const event = {
      id: randomUUID(),
      'detail-type': 'sluice.events',
      time: new Date().toISOString(),
      detail: { workspaceId, events: ['x'.repeat(250_000)] },
    };

    // Act
    const id = await store.put({ workspaceId, kind: 'rows', event, reasons });
    const listed: StoredRejection[] = [];
    for await (const rejection of store.list(workspaceId)) listed.push(rejection);

    // Assess
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id, workspaceId, kind: 'rows', event });
    const kept = listed[0]!.reasons;
    expect(kept.length).toBeLessThan(reasons.length);
    expect(kept.slice(0, -1)).toEqual(reasons.slice(0, kept.length - 1));
    expect(kept.at(-1)).toBe(`(${reasons.length - kept.length + 1} more reasons not kept)`);
  });
});
