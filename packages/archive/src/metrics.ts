import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { DatasetCompaction, DatasetFailure } from './compaction.js';

/** The `service` dimension of the archive's metrics (namespace `Sluice`, dimension `Stage` as the engine's). */
export const ARCHIVE_SERVICE = 'sluice-archive';

/** Where the compaction's figures go; the handler publishes them as EMF, tests inject their own. */
export interface ArchiveMetrics {
  recordCompaction(figures: {
    results: DatasetCompaction[];
    failures: DatasetFailure[];
    durationMs: number;
  }): void;
}

/**
 * Powertools Metrics (EMF): once per compaction, `ArchiveLagSeconds` (the oldest archive cursor's distance
 * from now, over every dataset compacted: the alarm's input), `ArchiveFailures` (datasets whose compaction
 * failed), `ArchivedRows`, `ArchivedBytes`, `ArchiveObjectsWritten` and `ArchiveCompactionMs`.
 */
export function powertoolsArchiveMetrics(options: { stage: string }): ArchiveMetrics {
  const metrics = new Metrics({
    namespace: 'Sluice',
    serviceName: ARCHIVE_SERVICE,
    defaultDimensions: { Stage: options.stage },
  });
  return {
    recordCompaction({ results, failures, durationMs }) {
      const lag = results.reduce((max, result) => Math.max(max, result.lagSeconds), 0);
      metrics.addMetric('ArchiveLagSeconds', MetricUnit.Seconds, lag);
      metrics.addMetric('ArchiveFailures', MetricUnit.Count, failures.length);
      metrics.addMetric(
        'ArchivedRows',
        MetricUnit.Count,
        results.reduce((sum, r) => sum + r.rows, 0),
      );
      metrics.addMetric(
        'ArchivedBytes',
        MetricUnit.Bytes,
        results.reduce((sum, r) => sum + r.bytes, 0),
      );
      metrics.addMetric(
        'ArchiveObjectsWritten',
        MetricUnit.Count,
        results.reduce((sum, r) => sum + r.objects, 0),
      );
      metrics.addMetric('ArchiveCompactionMs', MetricUnit.Milliseconds, durationMs);
      metrics.publishStoredMetrics();
    },
  };
}
