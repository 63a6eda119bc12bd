import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { type EventDataset, SLUICE_METRICS_NAMESPACE } from '@sluice/core';

/** What one bus event did, as the ingest metrics count it. */
export interface BusEventFigures {
  /** The workspace the envelope names (`unknown` when it names none). */
  workspaceId: string;
  /** Now minus when the producer sent the bus event (its `time`), in ms, when it has one. */
  lagMs?: number;
  /** Rows (events, subscriber upserts and deletes) refused by the ingest rules, kept with their reasons. */
  rejectedRows: number;
  /** 1 when the whole envelope was refused (a detail that does not match, a source of another workspace). */
  rejectedEnvelopes: number;
  /** Events dropped by rule: test sends, history imports, more than 7 days late. */
  dropped: { test: number; history: number; late: number };
}

/** Where ingestion's metrics go. The default writes CloudWatch EMF through Powertools; tests inject their own. */
export interface IngestMetrics {
  /** Rows of one dataset refused because their explicit `recorded_at` is at or behind an export's position. */
  refusedBehindExport(workspaceId: string, dataset: EventDataset, count: number): void;
  /** The figures of one bus event (the ingest function; not the CLI). */
  busEvent?(figures: BusEventFigures): void;
}

/** The metric counting rows refused for being at or behind an export's position (dimension `Dataset`). */
export const REFUSED_BEHIND_EXPORT_METRIC = 'EventsRefusedBehindExport';
/** The `service` dimension of every ingest metric. */
export const INGEST_SERVICE = 'sluice-ingest';
/**
 * The ingest metrics of each bus event, by name. `IngestLagSeconds` has the dimensions `service` and `Stage`;
 * the counts have those, and again with `Workspace` too, published only when not zero (so a workspace costs a
 * metric only in the hours it has rejections or drops; no data is none).
 */
export const INGEST_METRICS = {
  lag: 'IngestLagSeconds',
  rejectedRows: 'EventsRejected',
  rejectedEnvelopes: 'EnvelopesRejected',
  droppedLate: 'EventsDroppedLate',
  droppedTest: 'EventsDroppedTest',
  droppedHistory: 'EventsDroppedHistory',
} as const;

/** Options of {@link powertoolsIngestMetrics}. */
export interface IngestMetricsOptions {
  /** The deployment stage (`SLUICE_STAGE`): the `Stage` dimension of the bus event metrics. */
  stage?: string;
}

/**
 * Powertools Metrics as EMF lines (namespace `Sluice`, `service` {@link INGEST_SERVICE}): per call of
 * `refusedBehindExport`, {@link REFUSED_BEHIND_EXPORT_METRIC} with dimension `Dataset` (the workspace id as
 * metadata); per bus event, {@link INGEST_METRICS}. `write` takes the line: stdout by default, as in Lambda;
 * the CLI passes stderr, where it does not mix with `--json` output.
 */
export function powertoolsIngestMetrics(
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  options: IngestMetricsOptions = {},
): IngestMetrics {
  const metrics = new Metrics({
    namespace: SLUICE_METRICS_NAMESPACE,
    serviceName: INGEST_SERVICE,
    ...(options.stage ? { defaultDimensions: { Stage: options.stage } } : {}),
  });
  const flush = (extraDimensionSet?: string[]) => {
    const document = metrics.serializeMetrics();
    if (extraDimensionSet) document._aws.CloudWatchMetrics[0]?.Dimensions.push(extraDimensionSet);
    metrics.clearMetrics();
    metrics.clearDimensions();
    metrics.clearMetadata();
    write(JSON.stringify(document));
  };
  return {
    refusedBehindExport(workspaceId, dataset, count) {
      if (count <= 0) return;
      metrics.addDimension('Dataset', dataset);
      metrics.addMetadata('workspaceId', workspaceId);
      metrics.addMetric(REFUSED_BEHIND_EXPORT_METRIC, MetricUnit.Count, count);
      flush();
    },
    busEvent(figures) {
      const counts: [string, number][] = [
        [INGEST_METRICS.rejectedRows, figures.rejectedRows],
        [INGEST_METRICS.rejectedEnvelopes, figures.rejectedEnvelopes],
        [INGEST_METRICS.droppedLate, figures.dropped.late],
        [INGEST_METRICS.droppedTest, figures.dropped.test],
        [INGEST_METRICS.droppedHistory, figures.dropped.history],
      ];
      // The lag of every bus event, all workspaces together.
      if (figures.lagMs !== undefined) {
        metrics.addMetric(INGEST_METRICS.lag, MetricUnit.Seconds, Math.max(0, figures.lagMs) / 1000);
        flush();
      }
      // The counts that are not zero: per workspace, and all workspaces together (one document, two
      // dimension sets), which the alarms read.
      const nonZero = counts.filter(([, value]) => value > 0);
      if (nonZero.length === 0) return;
      metrics.addDimension('Workspace', figures.workspaceId);
      for (const [name, value] of nonZero) metrics.addMetric(name, MetricUnit.Count, value);
      flush(options.stage ? ['service', 'Stage'] : ['service']);
    },
  };
}
