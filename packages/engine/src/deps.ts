import { ControlStore, CursorStore, DueIndex, LeaseStore, RunStateStore, RunStore } from '@sluice/control';
import { type BucketLocation, requiredEnv } from '@sluice/core';
import { EventLogReader, type EventSource } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { type BucketCredentials, type BucketWriter, createBucketClient, S3BucketWriter } from '@sluice/sinks';
import { powertoolsRunMetrics, type RunMetrics } from './metrics.js';
import { EventBridgeNoticePublisher, type NoticePublisher } from './notices.js';

/** A bucket writer; `close` (when present) releases its connections once the window is done. */
export type ClosableBucketWriter = BucketWriter & { close?: () => void };

/** Builds the writer of one destination's bucket from its location and opened credentials. */
export type BucketWriterFactory = (
  location: BucketLocation,
  credentials: BucketCredentials,
) => ClosableBucketWriter;

/** The opener of sealed secrets (the writer is the only part that decrypts). */
export type SecretOpener = Pick<SecretSealer, 'open'>;

/** The engine's settings (run-control reads them from its configuration). */
export interface EngineSettings {
  /** How long a run's writers start new files: the run's time budget. @default 180 s */
  runBudgetMs: number;
  /** How long the event log keeps a row: an export behind this lost rows, which is reported. @default 35 days */
  eventRetentionMs: number;
}

/** The defaults of {@link EngineSettings}. */
export const DEFAULT_ENGINE_SETTINGS: EngineSettings = {
  runBudgetMs: 180_000,
  eventRetentionMs: 35 * 86_400_000,
};

/** Everything the engine talks to. Each use case takes a `Partial` of it; the rest are module defaults. */
export interface EngineDeps {
  controlStore: Pick<ControlStore, 'getDestination'>;
  leases: LeaseStore;
  cursors: CursorStore;
  runs: RunStore;
  runState: RunStateStore;
  /** The due index Dispatch pages through. */
  dueIndex: Pick<DueIndex, 'queryDuePage' | 'markDispatched'>;
  settings: EngineSettings;
  sealer: SecretOpener;
  eventSource: EventSource;
  bucketWriterFactory: BucketWriterFactory;
  metrics: RunMetrics;
  /** Where a destination's failing and recovered notices are published (the Sluice bus). */
  notices: NoticePublisher;
  now: () => Date;
}

/** The production writer: one S3 client per window, destroyed when the window is done. */
export const defaultBucketWriterFactory: BucketWriterFactory = (location, credentials) => {
  const client = createBucketClient(location, credentials);
  const writer = new S3BucketWriter({ location, client });
  return {
    writeFile: (key, lines, options) => writer.writeFile(key, lines, options),
    writeMarker: (key, body) => writer.writeMarker(key, body),
    close: () => client.destroy(),
  };
};

const builders: { [K in keyof EngineDeps]: () => EngineDeps[K] } = {
  controlStore: () => new ControlStore(),
  leases: () => new LeaseStore(),
  cursors: () => new CursorStore(),
  runs: () => new RunStore(),
  runState: () => new RunStateStore(),
  dueIndex: () => new DueIndex(),
  settings: () => DEFAULT_ENGINE_SETTINGS,
  sealer: () => new SecretSealer(),
  eventSource: () => new EventLogReader(),
  bucketWriterFactory: () => defaultBucketWriterFactory,
  metrics: () => powertoolsRunMetrics({ stage: requiredEnv('SLUICE_STAGE') }),
  notices: () => new EventBridgeNoticePublisher({ eventBusName: requiredEnv('SLUICE_EVENT_BUS_NAME') }),
  now: () => () => new Date(),
};
const built: Partial<EngineDeps> = {};

function defaultOf<K extends keyof EngineDeps>(key: K): EngineDeps[K] {
  built[key] ??= builders[key]();
  return built[key] as EngineDeps[K];
}

/**
 * Fills the injected dependencies with the module defaults: the control table stores, the KMS sealer, the
 * DynamoDB event log reader, the S3 writer, Powertools metrics, the EventBridge notice publisher and the clock. Each default is built on
 * first use, once per process, so a function that never opens a secret needs no KMS key id.
 */
export function resolveDeps(injected: Partial<EngineDeps> = {}): EngineDeps {
  const deps = {} as EngineDeps;
  for (const key of Object.keys(builders) as (keyof EngineDeps)[]) {
    Object.defineProperty(deps, key, {
      enumerable: true,
      get: () => injected[key] ?? defaultOf(key),
    });
  }
  return deps;
}
