import { describe, expect, it } from 'vitest';
import { powertoolsIngestMetrics, REFUSED_BEHIND_EXPORT_METRIC } from './metrics.js';

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
