import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type EventDataset, SLUICE_METRICS_NAMESPACE } from '@sluice/core';

/** Where ingestion's metrics go. The default writes CloudWatch EMF through Powertools; tests inject their own. */
export interface IngestMetrics {
  /** Rows of one dataset refused because their explicit `recorded_at` is at or behind an export's position. */
  refusedBehindExport(workspaceId: string, dataset: EventDataset, count: number): void;
}

/** The metric counting rows refused for being at or behind an export's position (dimension `Dataset`). */
export const REFUSED_BEHIND_EXPORT_METRIC = 'EventsRefusedBehindExport';

/**
 * Powertools Metrics as one EMF line per call (namespace `Sluice`, metric {@link REFUSED_BEHIND_EXPORT_METRIC},
 * dimension `Dataset`, the workspace id as metadata to keep cardinality flat). `write` takes the line:
 * stdout by default, as in Lambda; the CLI passes stderr, where it does not mix with `--json` output.
 */
export function powertoolsIngestMetrics(
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): IngestMetrics {
  const metrics = new Metrics({ namespace: SLUICE_METRICS_NAMESPACE, serviceName: 'sluice-ingest' });
  return {
    refusedBehindExport(workspaceId, dataset, count) {
      if (count <= 0) return;
      metrics.addDimension('Dataset', dataset);
      metrics.addMetadata('workspaceId', workspaceId);
      metrics.addMetric(REFUSED_BEHIND_EXPORT_METRIC, MetricUnit.Count, count);
      const line = JSON.stringify(metrics.serializeMetrics());
      metrics.clearMetrics();
      metrics.clearDimensions();
      metrics.clearMetadata();
      write(line);
    },
  };
}
