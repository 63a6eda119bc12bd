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

/** Rows of one dataset that left the event log before an export wrote them. */
export interface ExpiredRowsFigures {
  workspaceId: string;
  destinationId: string;
  dataset: string;
  /** The recorded time lost: `(fromMs, toMs]`. */
  fromMs: number;
  toMs: number;
}

/** Where run metrics go. The default publishes CloudWatch EMF through Powertools; tests inject their own. */
export interface RunMetrics {
  recordRun(figures: RunFigures): void;
  recordExpiredRows(figures: ExpiredRowsFigures): void;
}

/** The CloudWatch namespace of every Sluice metric. */
export const METRICS_NAMESPACE = 'Sluice';

/**
 * Powertools Metrics (EMF on stdout, namespace `Sluice`): RowsExported, FilesWritten, BytesWritten and
 * RunDurationMs once per run, ExportLagSeconds per dataset (dimension `Dataset`), and
 * ExpiredUnexportedSeconds (dimension `Dataset`) when an export fell behind the event log's retention. Destination ids are
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
    recordExpiredRows(figures) {
      const single = metrics.singleMetric();
      single.addMetadata('workspaceId', figures.workspaceId);
      single.addMetadata('destinationId', figures.destinationId);
      single.addDimension('Dataset', figures.dataset);
      single.addMetric(
        'ExpiredUnexportedSeconds',
        MetricUnit.Seconds,
        Math.round((figures.toMs - figures.fromMs) / 1000),
      );
    },
  };
}

/** Metrics that go nowhere (tests, benchmarks). */
export const noRunMetrics: RunMetrics = { recordRun: () => undefined, recordExpiredRows: () => undefined };
