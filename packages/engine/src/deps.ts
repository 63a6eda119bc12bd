import type {
  ArchiveCoverage,
  ArchiveCursorStore,
  BackfillStore,
  ControlStore,
  CursorStore,
  DueIndex,
  LeaseStore,
  OrganizationStore,
  RunStateStore,
  RunStore,
} from '@sluice/control';
import {
  type BucketLocation,
  DEFAULT_EVENT_RETENTION_MS,
  type EventDataset,
  hasIncludedChildren,
  includedOrganizations,
  type OrganizationChoice,
  organizationIds,
  type ChildLink,
} from '@sluice/core';
import type { EventSource } from '@sluice/eventlog';
import type { SecretSealer } from '@sluice/secrets';
import { type BucketCredentials, type BucketWriter, createBucketClient, S3BucketWriter } from '@sluice/sinks';
import { noRunMetrics, type RunMetrics } from './metrics.js';
import type { NoticePublisher } from './notices.js';

/** A bucket writer; `close` (when present) releases its connections once the window is done. */
export type ClosableBucketWriter = BucketWriter & { close?: () => void };

/** Builds the writer of one destination's bucket from its location and opened credentials. */
export type BucketWriterFactory = (
  location: BucketLocation,
  credentials: BucketCredentials,
) => ClosableBucketWriter;

/**
 * The opener of sealed secrets (the writer is the only part that decrypts). The writer passes the run's
 * `configVersion`, so an opener that keeps secrets (`CachedSecretOpener`) keys them by it.
 */
export interface SecretOpener {
  open(
    sealed: Parameters<SecretSealer['open']>[0],
    context: Parameters<SecretSealer['open']>[1],
    version?: { configVersion: number },
  ): Promise<string>;
}

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
  eventRetentionMs: DEFAULT_EVENT_RETENTION_MS,
};

/** Everything the engine talks to. Each use case takes a `Partial` of it; see {@link resolveDeps}. */
export interface EngineDeps {
  controlStore: Pick<ControlStore, 'getDestination'>;
  leases: LeaseStore;
  cursors: CursorStore;
  runs: RunStore;
  runState: RunStateStore;
  /** Backfills: their records, slot, progress and due entries. */
  backfills: BackfillStore;
  /** The due index Dispatch pages through. */
  dueIndex: Pick<DueIndex, 'queryDuePage' | 'markDispatched'>;
  settings: EngineSettings;
  sealer: SecretOpener;
  eventSource: EventSource;
  /** The event archive's cursors: how far back rows are still available to an export that fell behind. */
  archiveCoverage: Pick<ArchiveCursorStore, 'get'>;
  bucketWriterFactory: BucketWriterFactory;
  metrics: RunMetrics;
  /** Where a destination's failing and recovered notices are published (the Sluice bus). */
  notices: NoticePublisher;
  /** The children of parent organisations (read only for an export that includes children). */
  organizations: Pick<OrganizationStore, 'listChildren'>;
  now: () => Date;
}

/**
 * Child organisations asked at once whether they have rows (by a writer before its span, by Dispatch): each
 * asks its hours and shards a few Queries at once, so 8 stay within the SDK's 50 sockets.
 */
export const ORGANIZATION_CHECKS_AT_ONCE = 8;

/**
 * Child organisations with rows whose files a writer writes at once (each its own read and upload), so a span
 * with many busy children is not written one child after the other.
 */
export const CHILDREN_WRITTEN_AT_ONCE = 4;

/** The link history an export's choice of children is resolved against: none when it includes no children. */
export async function linksOf(
  destination: OrganizationChoice,
  deps: Pick<EngineDeps, 'organizations'>,
): Promise<ChildLink[]> {
  if (!hasIncludedChildren(destination)) return [];
  return deps.organizations.listChildren(destination.workspaceId, { includeUnlinked: true });
}

/**
 * The event archive's coverage of `dataset` for an export: its own workspace's, narrowed by that of each child
 * it includes or included over any time (issue 27) to the latest start and the earliest end, so that every
 * organisation's rows are available over it; undefined (the hot log only) when one of them has no archive.
 * Planning and backfills then report the windows before it as lost, as for the workspace's own rows, instead
 * of delivering them without a child's rows.
 */
export async function exportArchiveCoverage(
  destination: OrganizationChoice,
  links: readonly ChildLink[],
  dataset: EventDataset,
  deps: Pick<EngineDeps, 'archiveCoverage'>,
): Promise<ArchiveCoverage | undefined> {
  let coverage = await deps.archiveCoverage.get(destination.workspaceId, dataset);
  const always = { fromMs: Number.NEGATIVE_INFINITY, toMs: Number.POSITIVE_INFINITY };
  const children = organizationIds(includedOrganizations(destination, links, always)).slice(1);
  for (const child of children) {
    if (coverage === undefined) return undefined;
    const theirs = await deps.archiveCoverage.get(child, dataset);
    if (theirs === undefined) return undefined;
    coverage = {
      startMs: Math.max(coverage.startMs, theirs.startMs),
      throughMs: Math.min(coverage.throughMs, theirs.throughMs),
    };
  }
  return coverage;
}

/**
 * The production writer: one S3 client per window, destroyed when the window is done (a role's keys from STS
 * are cached by that client, so one AssumeRole per window). `allowedEndpoints` exempts origins from the
 * endpoint rules and `assumeRoles: false` says there is no STS: only the local runtime passes them.
 */
export function createBucketWriterFactory(
  options: { allowedEndpoints?: ReadonlySet<string>; assumeRoles?: boolean } = {},
): BucketWriterFactory {
  return (location, credentials) => {
    const client = createBucketClient(location, credentials, {
      ...(options.allowedEndpoints ? { allowedEndpoints: options.allowedEndpoints } : {}),
      ...(options.assumeRoles === false ? { assumeRoles: false } : {}),
    });
    const writer = new S3BucketWriter({ location, client });
    return {
      writeFile: (key, lines, options) => writer.writeFile(key, lines, options),
      writeMarker: (key, body) => writer.writeMarker(key, body),
      close: () => client.destroy(),
    };
  };
}

/** The production writer with every endpoint checked. */
export const defaultBucketWriterFactory: BucketWriterFactory = createBucketWriterFactory();

/** No event archive: rows behind the hot log's retention are gone (a platform's own source without one). */
export const noArchive: Pick<ArchiveCursorStore, 'get'> = { get: async () => undefined };

/**
 * The dependencies without a default that each use case reaches (with the use cases it calls): what an entry
 * point must inject. {@link engineDeps} checks them where the engine is built.
 */
export const ENGINE_NEEDS = {
  // organizations: the links of an export that includes children (linksOf), also for a backfill's plan.
  claimAndPlan: ['controlStore', 'leases', 'cursors', 'runs', 'runState', 'backfills', 'organizations'],
  commitRun: ['controlStore', 'leases', 'cursors', 'runs', 'runState', 'backfills', 'notices'],
  recordFailure: ['controlStore', 'cursors', 'runs', 'runState', 'backfills', 'notices'],
  findDueDestinations: [
    'controlStore',
    'leases',
    'cursors',
    'runs',
    'runState',
    'backfills',
    'dueIndex',
    'eventSource',
    // A parent's children asked for new rows (needsRun).
    'organizations',
  ],
  writeWindow: ['controlStore', 'cursors', 'backfills', 'sealer', 'eventSource', 'organizations'],
} as const satisfies Record<string, readonly (keyof EngineDeps)[]>;

/** A use case of {@link ENGINE_NEEDS}. */
export type EngineUseCase = keyof typeof ENGINE_NEEDS;

/**
 * The engine as an entry point builds it: `injected`, checked now against what `useCases` need, so a missing
 * dependency fails the entry point when it is built (its cold start), naming it, instead of the first call.
 * @throws Error naming every missing dependency and the use cases that need it
 */
export function engineDeps(
  injected: Partial<EngineDeps>,
  useCases: readonly EngineUseCase[],
): Partial<EngineDeps> {
  const missing = new Map<keyof EngineDeps, EngineUseCase[]>();
  for (const useCase of useCases) {
    for (const key of ENGINE_NEEDS[useCase]) {
      if (injected[key] === undefined) missing.set(key, [...(missing.get(key) ?? []), useCase]);
    }
  }
  if (missing.size > 0) {
    const names = [...missing].map(([key, needing]) => `${key} (${needing.join(', ')})`);
    throw new Error(
      `The engine needs ${names.join(', ')}: the entry point builds them from its configuration.`,
    );
  }
  return injected;
}

/** A store or client the caller must inject: it needs settings (table names, key id) only an entry point has. */
function injected<K extends keyof EngineDeps>(key: K): () => EngineDeps[K] {
  return () => {
    throw new Error(`The engine needs ${key}: the entry point builds it from its configuration.`);
  };
}

const builders: { [K in keyof EngineDeps]: () => EngineDeps[K] } = {
  controlStore: injected('controlStore'),
  leases: injected('leases'),
  cursors: injected('cursors'),
  runs: injected('runs'),
  runState: injected('runState'),
  backfills: injected('backfills'),
  dueIndex: injected('dueIndex'),
  settings: () => DEFAULT_ENGINE_SETTINGS,
  sealer: injected('sealer'),
  eventSource: injected('eventSource'),
  archiveCoverage: () => noArchive,
  bucketWriterFactory: () => defaultBucketWriterFactory,
  metrics: () => noRunMetrics,
  notices: injected('notices'),
  organizations: injected('organizations'),
  now: () => () => new Date(),
};
const built: Partial<EngineDeps> = {};

function defaultOf<K extends keyof EngineDeps>(key: K): EngineDeps[K] {
  built[key] ??= builders[key]();
  return built[key] as EngineDeps[K];
}

/**
 * Fills the injected dependencies with the module defaults: the settings, the S3 writer, no metrics, no
 * archive and the clock. The stores, the sealer, the event source and the notice publisher need table names, a key id or a bus
 * name, so the entry point injects them; one that is used without being injected throws, naming it.
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
