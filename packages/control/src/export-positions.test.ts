import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { documentClient } from './client.js';
import { ControlExportPositions } from './export-positions.js';
import { cursorSk, destinationSk, leaseSk, workspacePk } from './items.js';
import { OrganizationStore } from './organizations.js';
import { WorkspaceStore } from './workspaces.js';
import { controlTable } from '../../../test/helpers/tables.js';

const tableName = process.env.SLUICE_CONTROL_TABLE as string;
const positions = new ControlExportPositions(controlTable);

async function put(item: Record<string, unknown>): Promise<void> {
  await documentClient.send(new PutCommand({ TableName: tableName, Item: item }));
}

describe('ControlExportPositions', () => {
  it('gives per event dataset the furthest committed or planned position over every destination', async () => {
    // Prepare: two destinations of one workspace, and a neighbour workspace further ahead.
    const workspaceId = `ws_${randomUUID()}`;
    const neighbour = `ws_${randomUUID()}`;
    const pk = workspacePk(workspaceId);
    await put({ PK: pk, SK: destinationSk('exp_a'), name: 'A' });
    await put({ PK: pk, SK: destinationSk('exp_b'), name: 'B' });
    await put({ PK: pk, SK: leaseSk('exp_a'), runId: 'run_1', expiresAtMs: 9_999_999 });
    await put({
      PK: pk,
      SK: cursorSk('exp_a', 'email_events'),
      exportedThroughMs: 1_000,
      planned: [
        { fromMs: 1_000, toMs: 4_000, runId: 'run_1' },
        { fromMs: 4_000, toMs: 5_000, runId: 'run_1' },
      ],
    });
    await put({ PK: pk, SK: cursorSk('exp_b', 'email_events'), exportedThroughMs: 3_000 });
    await put({ PK: pk, SK: cursorSk('exp_b', 'custom_events'), exportedThroughMs: 200 });
    // Planned, never committed: the plan alone is a position.
    await put({
      PK: pk,
      SK: cursorSk('exp_b', 'sms_events'),
      planned: [{ fromMs: 10, toMs: 70, runId: 'r' }],
    });
    await put({ PK: pk, SK: cursorSk('exp_a', 'subscribers'), snapshotDate: '2026-10-01' });
    await put({
      PK: workspacePk(neighbour),
      SK: cursorSk('exp_c', 'email_events'),
      exportedThroughMs: 9_000,
    });

    // Act
    const found = await positions.highestPositions(workspaceId);

    // Assess
    expect(Object.fromEntries(found)).toEqual({ email_events: 5_000, sms_events: 70, custom_events: 200 });
    expect((await positions.highestPositions(`ws_${randomUUID()}`)).size).toBe(0);
  });

  it("counts for a child its parent's exports that include it, and only those", async () => {
    // Prepare: a child linked to a parent whose exports are further ahead: one lists the child, one '*',
    // one lists another child only
    const [parent, child, sibling] = [`ws_${randomUUID()}`, `ws_${randomUUID()}`, `ws_${randomUUID()}`];
    const workspaces = new WorkspaceStore(controlTable);
    for (const workspace of [parent, child, sibling]) await workspaces.ensureWorkspace(workspace);
    const organizations = new OrganizationStore(controlTable);
    await organizations.link(parent, child);
    await organizations.link(parent, sibling);
    const pk = workspacePk(parent);
    await put({ PK: workspacePk(child), SK: cursorSk('exp_own', 'click_events'), exportedThroughMs: 1_000 });
    await put({ PK: pk, SK: destinationSk('exp_listed'), childOrganizations: [child] });
    await put({ PK: pk, SK: cursorSk('exp_listed', 'click_events'), exportedThroughMs: 4_000 });
    await put({ PK: pk, SK: destinationSk('exp_all'), childOrganizations: ['*'] });
    await put({
      PK: pk,
      SK: cursorSk('exp_all', 'opt_out_events'),
      planned: [{ fromMs: 0, toMs: 6_000, runId: 'r' }],
    });
    await put({ PK: pk, SK: destinationSk('exp_other'), childOrganizations: [sibling] });
    await put({ PK: pk, SK: cursorSk('exp_other', 'click_events'), exportedThroughMs: 9_000 });
    await put({ PK: pk, SK: destinationSk('exp_none'), name: 'no children' });
    await put({ PK: pk, SK: cursorSk('exp_none', 'message_events'), exportedThroughMs: 9_000 });

    // Act
    const found = await positions.highestPositions(child);

    // Assess: an import into the child at or behind 4,000 (clicks) or 6,000 (opt-outs) would be passed by the
    // parent's export, so it is refused like one behind the child's own
    expect(Object.fromEntries(found)).toEqual({ click_events: 4_000, opt_out_events: 6_000 });
    expect(Object.fromEntries(await positions.highestPositions(parent))).toEqual({
      click_events: 9_000,
      opt_out_events: 6_000,
      message_events: 9_000,
    });
  });

  it('reads every page of a partition larger than one 1 MB Query page', async () => {
    // Prepare: destination items of about 100 KB each sort before the cursor of the last one.
    const workspaceId = `ws_${randomUUID()}`;
    const pk = workspacePk(workspaceId);
    const padding = 'x'.repeat(100_000);
    for (let i = 0; i < 12; i++) await put({ PK: pk, SK: destinationSk(`exp_${i}`), padding });
    await put({ PK: pk, SK: cursorSk('exp_9', 'email_events'), exportedThroughMs: 42 });

    const found = await positions.highestPositions(workspaceId);

    expect(Object.fromEntries(found)).toEqual({ email_events: 42 });
  });
});
