import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/** The figures of one committed run, per dataset. */
export interface RunFigures {
  workspaceId: string;
  destinationId: string;
  rows: number;
  files: number;
  bytes: number;
  durationMs: number;
  /** Seconds between now and each event dataset's `exportedThrough`. */
  lagSecondsByDataset: Record<string, number>;
}

/** Where run metrics go. The default publishes CloudWatch EMF through Powertools; tests inject their own. */
export interface RunMetrics {
  recordRun(figures: RunFigures): void;
}

/** The CloudWatch namespace of every Sluice metric. */
export const METRICS_NAMESPACE = 'Sluice';

/**
 * Powertools Metrics (EMF on stdout, namespace `Sluice`): RowsExported, FilesWritten, BytesWritten and
 * RunDurationMs once per run, and ExportLagSeconds per dataset (dimension `Dataset`). Destination ids are
 * metadata, not dimensions, to keep metric cardinality flat.
 */
export function powertoolsRunMetrics(): RunMetrics {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: 'sluice-engine' });
  return {
    recordRun(figures) {
      metrics.addMetadata('workspaceId', figures.workspaceId);
      metrics.addMetadata('destinationId', figures.destinationId);
      metrics.addMetric('RowsExported', MetricUnit.Count, figures.rows);
      metrics.addMetric('FilesWritten', MetricUnit.Count, figures.files);
      metrics.addMetric('BytesWritten', MetricUnit.Bytes, figures.bytes);
      metrics.addMetric('RunDurationMs', MetricUnit.Milliseconds, figures.durationMs);
      metrics.publishStoredMetrics();
      for (const [dataset, seconds] of Object.entries(figures.lagSecondsByDataset)) {
        const single = metrics.singleMetric();
        single.addDimension('Dataset', dataset);
        single.addMetric('ExportLagSeconds', MetricUnit.Seconds, seconds);
      }
    },
  };
}

/** Metrics that go nowhere (tests, benchmarks). */
export const noRunMetrics: RunMetrics = { recordRun: () => undefined };
