import { CONTROL_TABLE } from '@sluice/core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalTables,
  localDynamoDbClient,
  type DispatchOutcome,
  type Json,
  type LocalWorkflows,
} from '@sluice/devstack';
import { uniqueId } from './harness.js';

/**
 * Dispatch past the old limit: the synthesized Dispatch definition, run locally with the real dispatch
 * handler against DynamoDB Local, with more due destinations than one state could ever hold (the old
 * single result passed 256 KB at about 2,300). Queued destinations need no event-log query, so the test
 * measures paging and starting. Starts are counted, not run (an ExportRun each would take minutes here).
 */

const DESTINATIONS = 3_000;
/** The limit Step Functions puts on a state's input or output. */
const STATE_LIMIT_BYTES = 256 * 1024;

/** This file's own control table, so no other suite's destination is due here. */
const controlTable = uniqueId('sluice-control-dispatch-');
let workflows: LocalWorkflows;
let seed: (workspaceId: string) => Promise<string[]>;

beforeAll(async () => {
  const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB as string;
  const dynamo = localDynamoDbClient(endpoint);
  await createLocalTables(dynamo, [{ name: controlTable, spec: CONTROL_TABLE }]);
  dynamo.destroy();
  // Read at load by the dispatch function's config: set before it is imported.
  process.env.SLUICE_CONTROL_TABLE = controlTable;
  const [{ localWorkflows }, { createDocumentClient }, seeding] = await Promise.all([
    import('@sluice/local'),
    import('@sluice/control'),
    import('../helpers/seed-destinations.js'),
  ]);
  workflows = await localWorkflows();
  const client = createDocumentClient();
  seed = async (workspaceId) => {
    const destinations = seeding.queuedDestinations(DESTINATIONS, workspaceId, new Date(Date.now() - 60_000));
    await seeding.seedDestinations(client, controlTable, destinations);
    return destinations.map((d) => d.id);
  };
}, 300_000);

/** Counts the StartExportRun inputs by destination id. */
function startCounter(): { counts: Map<string, number>; onStart: (input: Json) => void } {
  const counts = new Map<string, number>();
  return {
    counts,
    onStart: (input) => {
      const { workspaceId, destinationId, trigger } = input as Record<string, string | undefined>;
      expect(workspaceId).toBeTruthy();
      expect(trigger).toBe('manual');
      const id = String(destinationId);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    },
  };
}

function expectEachOnce(counts: Map<string, number>, ids: string[]): void {
  expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
  expect([...counts.keys()].sort()).toEqual([...ids].sort());
}

describe(`Dispatch of ${DESTINATIONS.toLocaleString('en-US')} due destinations`, () => {
  it('starts every one exactly once in one execution, one bounded page at a time', async () => {
    // Prepare
    const ids = await seed(uniqueId('ws_'));
    const { counts, onStart } = startCounter();

    // Act
    const outcome = await workflows.runDispatch({ onStart });

    // Assess
    expectEachOnce(counts, ids);
    expect(outcome.started).toBe(DESTINATIONS);
    expect(outcome.largestStateBytes).toBeLessThan(STATE_LIMIT_BYTES / 4);
    console.info(
      `Dispatch of ${DESTINATIONS} due destinations: ${outcome.started} starts, largest state ${outcome.largestStateBytes} B`,
    );
    // A second tick finds none due: each was marked dispatched (its run sets the real next time).
    const again = startCounter();
    expect((await workflows.runDispatch({ onStart: again.onStart })).started).toBe(0);
  }, 300_000);

  it('starts each once when two executions overlap', async () => {
    // Prepare
    const ids = await seed(uniqueId('ws_'));
    const { counts, onStart } = startCounter();

    // Act: two ticks at once, racing over the same pages
    const outcomes: DispatchOutcome[] = await Promise.all([
      workflows.runDispatch({ onStart }),
      workflows.runDispatch({ onStart }),
    ]);

    // Assess
    expectEachOnce(counts, ids);
    expect(outcomes[0]!.started + outcomes[1]!.started).toBe(DESTINATIONS);
    console.info(`Overlapping Dispatch executions started ${outcomes.map((o) => o.started).join(' + ')}`);
  }, 300_000);
});
