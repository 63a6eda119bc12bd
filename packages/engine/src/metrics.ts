import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { BUCKET_ERROR_NAMES } from '@sluice/sinks';
import { PERMANENT_ERROR_NAMES } from './errors.js';

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

/** Where Powertools Metrics writes its own warnings (a Powertools Logger will do). */
export type MetricsLogger = NonNullable<NonNullable<ConstructorParameters<typeof Metrics>[0]>['logger']>;

/** The CloudWatch namespace of every Sluice metric. */
export const METRICS_NAMESPACE = 'Sluice';
/** The `service` dimension of every engine metric. */
export const ENGINE_SERVICE = 'sluice-engine';
/** The dimension naming the deployment stage, on every engine metric, so stages in one account stay apart. */
export const STAGE_DIMENSION = 'Stage';

/** Options of the Powertools metrics. */
export interface EngineMetricsOptions {
  /** The deployment stage (`SLUICE_STAGE`), published as the `Stage` dimension. */
  stage: string;
  /**
   * The Powertools instance to record on: a Lambda passes the one its `logMetrics` middleware flushes.
   * @default a new {@link engineMetrics} instance
   */
  metrics?: Metrics;
}

/**
 * The Powertools Metrics of the engine: namespace `Sluice`, dimensions `service` ({@link ENGINE_SERVICE}, which
 * the alarms match) and `Stage`. `logger` takes Powertools' own warnings.
 */
export function engineMetrics(options: { stage: string; logger?: MetricsLogger }): Metrics {
  return new Metrics({
    namespace: METRICS_NAMESPACE,
    serviceName: ENGINE_SERVICE,
    defaultDimensions: { [STAGE_DIMENSION]: options.stage },
    ...(options.logger ? { logger: options.logger } : {}),
  });
}

/**
 * Powertools Metrics (EMF on stdout, namespace `Sluice`, dimensions `service` and `Stage`): RowsExported,
 * FilesWritten, BytesWritten and RunDurationMs once per run, ExportLagSeconds per dataset (dimension
 * `Dataset` too), and ExpiredUnexportedSeconds (dimension `Dataset`) when an export fell behind the event
 * log's retention and rows expired unexported. Destination ids are metadata, not dimensions, to keep metric cardinality flat.
 */
export function powertoolsRunMetrics(options: EngineMetricsOptions): RunMetrics {
  const metrics = options.metrics ?? engineMetrics(options);
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

/** Who a failed run is for: the customer (their bucket, key or settings) or the operator (Sluice itself). */
export type FailureCause = 'destination' | 'sluice';

/**
 * Error names of failures the customer causes and fixes: every permanent error (no bucket, access denied,
 * wrong region, unknown key, a secret to re-enter, a bad location) and the customer's store being unreachable,
 * throttling, failing or answering in a way no rule recognises (`BucketUnknownError`: an odd store is the
 * customer's to fix, so it sends a `failing` notice and pages nobody) after the retries. The rest (the
 * database, KMS, timeouts, anything unclassified outside the bucket) is Sluice's.
 */
export const DESTINATION_FAILURE_NAMES: readonly string[] = [
  ...PERMANENT_ERROR_NAMES,
  BUCKET_ERROR_NAMES.endpoint_unreachable,
  BUCKET_ERROR_NAMES.throttled,
  BUCKET_ERROR_NAMES.server_error,
  BUCKET_ERROR_NAMES.unknown,
];

/** The cause of a failed run, from the error name Step Functions caught. */
export function failureCause(errorName: string | undefined): FailureCause {
  return errorName !== undefined && DESTINATION_FAILURE_NAMES.includes(errorName) ? 'destination' : 'sluice';
}

/** Where failed runs are counted. */
export interface FailureMetrics {
  recordFailure(errorName: string | undefined): void;
}

/**
 * `RunsFailed` (Count) with the dimension `Cause` (`destination` or `sluice`) besides `service` and `Stage`:
 * the operator is paged for `sluice` only; `destination` failures are the customers' and show on their
 * destinations (status `failed`, `lastError`).
 */
export function powertoolsFailureMetrics(options: EngineMetricsOptions): FailureMetrics {
  const metrics = options.metrics ?? engineMetrics(options);
  return {
    recordFailure(errorName) {
      const single = metrics.singleMetric();
      single.addDimension('Cause', failureCause(errorName));
      if (errorName !== undefined) single.addMetadata('errorName', errorName);
      single.addMetric('RunsFailed', MetricUnit.Count, 1);
    },
  };
}
