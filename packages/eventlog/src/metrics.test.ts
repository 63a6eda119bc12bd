import { describe, expect, it } from 'vitest';
import {
  INGEST_METRICS,
  INGEST_SERVICE,
  powertoolsIngestMetrics,
  REFUSED_BEHIND_EXPORT_METRIC,
} from './metrics.js';

describe('powertoolsIngestMetrics', () => {
  it('writes one EMF line per refusal count, namespace Sluice, dimension Dataset, the workspace as metadata', () => {
    // Prepare
    const lines: string[] = [];
    const metrics = powertoolsIngestMetrics((line) => lines.push(line));

    // Act
    metrics.refusedBehindExport('ws_a', 'email_events', 3);
    metrics.refusedBehindExport('ws_b', 'sms_events', 0);
    metrics.refusedBehindExport('ws_b', 'custom_events', 1);

    // Assess
    expect(lines).toHaveLength(2);
    const [first, second] = lines.map((line) => JSON.parse(line));
    expect(first._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: 'Sluice',
        Dimensions: [expect.arrayContaining(['Dataset'])],
        Metrics: [{ Name: REFUSED_BEHIND_EXPORT_METRIC, Unit: 'Count' }],
      },
    ]);
    expect(first).toMatchObject({
      Dataset: 'email_events',
      workspaceId: 'ws_a',
      [REFUSED_BEHIND_EXPORT_METRIC]: 3,
    });
    expect(second).toMatchObject({
      Dataset: 'custom_events',
      workspaceId: 'ws_b',
      [REFUSED_BEHIND_EXPORT_METRIC]: 1,
    });
  });
});

describe('powertoolsIngestMetrics: one bus event', () => {
  it('writes the lag for every bus event, and the counts that are not zero per workspace and over all', () => {
    // Prepare
    const lines: string[] = [];
    const metrics = powertoolsIngestMetrics((line) => lines.push(line), { stage: 'prod' });

    // Act
    metrics.busEvent?.({
      workspaceId: 'ws_a',
      lagMs: 2_500,
      rejectedRows: 0,
      rejectedEnvelopes: 0,
      dropped: { test: 0, history: 0, late: 0 },
    });
    metrics.busEvent?.({
      workspaceId: 'ws_b',
      lagMs: 60_000,
      rejectedRows: 2,
      rejectedEnvelopes: 0,
      dropped: { test: 0, history: 0, late: 3 },
    });

    // Assess
    const [lagA, lagB, countsB] = lines.map((line) => JSON.parse(line));
    expect(lines).toHaveLength(3);
    expect(lagA).toMatchObject({ service: INGEST_SERVICE, Stage: 'prod', [INGEST_METRICS.lag]: 2.5 });
    expect(lagA._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service', 'Stage']]);
    expect(lagB[INGEST_METRICS.lag]).toBe(60);
    expect(countsB._aws.CloudWatchMetrics[0]).toMatchObject({
      Dimensions: [
        ['service', 'Stage', 'Workspace'],
        ['service', 'Stage'],
      ],
      Metrics: [
        { Name: INGEST_METRICS.rejectedRows, Unit: 'Count' },
        { Name: INGEST_METRICS.droppedLate, Unit: 'Count' },
      ],
    });
    expect(countsB).toMatchObject({
      Workspace: 'ws_b',
      [INGEST_METRICS.rejectedRows]: 2,
      [INGEST_METRICS.droppedLate]: 3,
    });
  });
});
