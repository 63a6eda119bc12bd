/**
 * The ExportRun state machine's payloads of an export that includes very many child organisations (issue 27):
 * the synthesized definition run locally (aws-local-stepfunctions, which fails a state over Step Functions'
 * 256 KiB like AWS does), with the real ClaimAndPlan on DynamoDB Local (its cursor writes under DynamoDB's
 * 400 KB item limit) and a writer that resolves each item's organisations as the real one does, then
 * reports a result (one item fails after its retries, so the Map's Catch echoes it).
 */
import { ControlStore, OrganizationStore } from '@sluice/control';
import { DAY_MS, EVENT_DATASETS, HOUR_MS } from '@sluice/core';
import { definitionsFromTemplates, type Json, LocalWorkflows } from '@sluice/devstack';
import {
  claimAndPlan,
  type ClaimAndPlanInput,
  type EngineDeps,
  resolveDeps,
  type WriteWindowInput,
  withPlannedOrganizations,
} from '@sluice/engine';
import { beforeAll, describe, expect, it } from 'vitest';
import { engineHarness } from '../../packages/engine/src/engine-harness.test-support.js';
import { controlTable } from '../helpers/tables.js';
import { synthesize } from './helpers.js';

const CHILDREN = 500;
const STATE_LIMIT_BYTES = 256 * 1024;
const NOW = Date.now();
/** The export started ten days ago: every event dataset has more than a run's spans to catch up. */
const START_MS = Math.floor((NOW - 10 * DAY_MS) / HOUR_MS) * HOUR_MS;
const tag = `${NOW.toString(36)}${Math.random().toString(36).slice(2, 8)}`;
const PARENT = `ws_payload_parent_${tag}`;
/** Workspace ids of 128 characters, the longest a workspace id may be. */
const children = Array.from({ length: CHILDREN }, (_, i) =>
  `ws_payload_child_${tag}_${String(i).padStart(4, '0')}`.padEnd(128, 'x'),
);

const harness = engineHarness({ workspaceId: PARENT, folder: 'payload-test', nowMs: NOW });

beforeAll(async () => {
  const workspaces = new ControlStore(controlTable);
  const organizations = new OrganizationStore(controlTable);
  await workspaces.ensureWorkspace(PARENT);
  for (const child of children) {
    await workspaces.ensureWorkspace(child);
    await organizations.link(PARENT, child, new Date(START_MS - HOUR_MS));
  }
}, 600_000);

describe('the ExportRun payloads of a parent with very many children', () => {
  it(`keeps every state of a run under 256 KiB with ${CHILDREN} children of 128-character ids, every event dataset planned in full`, async () => {
    // Prepare: an hourly export of every event dataset, with every child ('*'), ten days behind
    expect(children.every((id) => id.length === 128)).toBe(true);
    const startFrom = new Date(START_MS).toISOString();
    const destination = await harness.createDestination({
      datasets: [...EVENT_DATASETS],
      frequency: 'hourly',
      startFrom,
      stored: { childOrganizations: ['*'], childOrganizationsAddedAt: { '*': startFrom } },
    });
    const deps: EngineDeps = resolveDeps(harness.deps(NOW));
    const built = synthesize();
    const definitions = definitionsFromTemplates([
      built.statefulTemplate.toJSON(),
      built.statelessTemplate.toJSON(),
    ]);
    const resolved: number[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      retryIntervalOverrides: { WriteWindow: 0 },
      functions: {
        runControl: async (event) => {
          const { action } = event as { action: string };
          if (action === 'claimAndPlan') return claimAndPlan(event as ClaimAndPlanInput, deps);
          if (action !== 'commit') return { recorded: true };
          const { results } = event as { results: { status: string }[] };
          return {
            status: results.some((r) => r.status === 'failed') ? 'failed' : 'succeeded',
            runAgain: false,
          };
        },
        writer: async (event) => {
          const { run, item } = event as WriteWindowInput;
          // The first dataset's writers always fail: their Map results are the failed items (the Catch's echo).
          if (item.dataset === EVENT_DATASETS[0]) {
            throw Object.assign(new Error('the bucket refused the upload'), { name: 'DestinationError' });
          }
          const planned = await withPlannedOrganizations(run, item, destination, deps);
          if (planned?.kind !== 'events') throw new Error('not an event span of the plan');
          resolved.push(planned.organizations?.length ?? 0);
          const { dataset, kind, fromMs, toMs } = item as Extract<typeof item, { kind: 'events' }>;
          return {
            dataset,
            kind,
            fromMs,
            toMs,
            status: 'written',
            doneThroughMs: toMs,
            rows: 0,
            files: 0,
            bytes: 0,
          };
        },
        dispatch: async () => ({ destinations: [] }),
      },
    });

    // Act
    const outcome = await workflows.runExportRun({
      workspaceId: PARENT,
      destinationId: destination.id,
      trigger: 'manual',
    });

    // Assess: 8 spans of each of the 7 datasets, every one reading the parent and all its children
    expect(outcome.error?.Error).toBe('DestinationError'); // the first dataset's writers, not a state's size
    expect(outcome.items).toBe(7 * 8);
    const results = (outcome.output as { results: { status: string; item?: Json }[] }).results;
    expect(results.filter((result) => result.status === 'failed')).toHaveLength(8);
    expect(resolved).toEqual(Array.from({ length: 6 * 8 }, () => CHILDREN + 1));
    expect(outcome.largestStateBytes).toBeLessThan(STATE_LIMIT_BYTES);
    // The plan is also stored within DynamoDB's item limit: each dataset's cursor holds its spans' organisations
    const cursors = await deps.cursors.get(PARENT, destination.id);
    expect(cursors.get(EVENT_DATASETS[0])?.plannedSpans.map((span) => span.organizations?.length)).toEqual(
      Array.from({ length: 8 }, () => CHILDREN + 1),
    );
  }, 600_000);
});
