import aslValidator from 'asl-validator';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Json,
  LocalWorkflows,
  definitionsFromTemplates,
  type WorkflowDefinitions,
} from '@sluice/devstack';
import { synthesize } from './helpers.js';

let definitions: WorkflowDefinitions;
beforeAll(() => {
  // Synthesized as `cdk synth` does, CloudFormation's default rules included: an invalid template throws here.
  const built = synthesize({}, { cfnValidation: true });
  definitions = definitionsFromTemplates([built.statefulTemplate.toJSON(), built.statelessTemplate.toJSON()]);
});

describe('the synthesized state machine definitions', () => {
  it.each(['exportRun', 'dispatch'] as const)(
    '%s is valid Amazon States Language (asl-validator)',
    (name) => {
      // Act
      const { isValid, errorsText } = aslValidator(definitions[name]);

      // Assess
      expect(errorsText('\n')).toBe('');
      expect(isValid).toBe(true);
    },
  );

  it('asl-validator refuses a broken definition (the check is live)', () => {
    // Prepare
    const broken = structuredClone(definitions.exportRun) as { StartAt: string };
    broken.StartAt = 'NoSuchState';

    // Act
    const { isValid } = aslValidator(broken);

    // Assess
    expect(isValid).toBe(false);
  });

  it('runs at most writerConcurrency (default 10) writers at once', () => {
    // Act
    const map = definitions.exportRun.States.WriteWindows as { Type: string; MaxConcurrency?: number };

    // Assess
    expect(map).toMatchObject({ Type: 'Map', MaxConcurrency: 10 });
  });

  it('passes no secret-shaped field in any state payload', () => {
    // Act
    const text = JSON.stringify(definitions);

    // Assess
    expect(text).not.toMatch(/secret|accessKeyId|ciphertext/i);
  });

  it('run locally: Dispatch starts ExportRun, which writes every planned window, 10 at most at once', async () => {
    // Prepare
    const run = {
      workspaceId: 'ws',
      destinationId: 'dst',
      runId: 'run',
      startedAt: '2026-01-01T00:00:00.000Z',
    };
    const items = Array.from({ length: 25 }, (_, i) => ({
      dataset: 'email_events',
      kind: 'events',
      fromMs: i * 10,
      toMs: i * 10 + 10,
    }));
    let running = 0;
    let mostAtOnce = 0;
    const committed: Json[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        dispatch: async () => ({
          destinations: [{ workspaceId: 'ws', destinationId: 'dst', trigger: 'schedule' }],
        }),
        runControl: async (event) => {
          const { action } = event as { action: string };
          if (action === 'claimAndPlan') return { outcome: 'planned', run, items };
          if (action === 'commit') committed.push(event as Json);
          return { status: 'succeeded', runAgain: false };
        },
        writer: async (event) => {
          running += 1;
          mostAtOnce = Math.max(mostAtOnce, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running -= 1;
          return {
            ...(event as { item: Record<string, Json> }).item,
            status: 'written',
            rows: 1,
            files: 1,
            bytes: 1,
          };
        },
      },
    });

    // Act
    const outcome = await workflows.runDispatch();

    // Assess
    expect(outcome.started).toBe(1);
    expect(outcome.runs.map((r) => r.status)).toEqual(['succeeded']);
    expect(outcome.runs[0]).toMatchObject({ items: 25, rows: 25, files: 25 });
    expect((committed[0] as { results: Json[] }).results).toHaveLength(25);
    expect(mostAtOnce).toBeGreaterThan(1);
    expect(mostAtOnce).toBeLessThanOrEqual(10);
  });
});
