import type { ProgressSaveOutcome, WindowProgress } from '@sluice/control';
import { progressKey } from '@sluice/control';
import {
  type BucketLocation,
  type Destination,
  eventFileKey,
  MAX_LINES_PER_FILE,
  snapshotFileKey,
  snapshotSuccessKey,
  spanWindows,
  windowKey,
  withSnapshotDate,
} from '@sluice/core';
import type { SourcePage } from '@sluice/eventlog';
import { type ClosableBucketWriter, type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError } from './errors.js';
import type { RunRef, StopReason, WindowResult, WorkItem, WriteWindowInput } from './payloads.js';

/** Pulls lines one at a time out of pages, so files can be cut at any line count; remembers the last position. */
class LineCursor {
  private page: SourcePage = { lines: [], keys: [] };
  private index = 0;
  private done = false;
  private readonly pages: AsyncIterator<SourcePage>;
  /** The position of the last line taken (undefined before the first). */
  lastKey: string | undefined;

  constructor(
    pages: AsyncIterable<SourcePage>,
    private readonly map: (line: string) => string = (line) => line,
  ) {
    this.pages = pages[Symbol.asyncIterator]();
  }

  /** True when another line follows; fetches the next non-empty page if needed. */
  async hasMore(): Promise<boolean> {
    while (this.index >= this.page.lines.length) {
      if (this.done) return false;
      const next = await this.pages.next();
      if (next.done) {
        this.done = true;
        return false;
      }
      this.page = next.value;
      this.index = 0;
    }
    return true;
  }

  /** The next at most `limit` lines (the encoder batches them). */
  async *take(limit: number): AsyncGenerator<string> {
    let taken = 0;
    while (taken < limit && (await this.hasMore())) {
      const end = Math.min(this.page.lines.length, this.index + (limit - taken));
      for (let i = this.index; i < end; i++) {
        this.lastKey = this.page.keys[i];
        yield this.map(this.page.lines[i] as string);
      }
      taken += end - this.index;
      this.index = end;
    }
  }

  /** Stops the source early (a stop or an error), releasing its reads. */
  async close(): Promise<void> {
    if (!this.done) {
      this.done = true;
      await this.pages.return?.();
    }
  }
}

/** Why the destination no longer wants this run's files, or undefined when it still does. */
export function stopReasonOf(destination: Destination | undefined, run: RunRef): StopReason | undefined {
  if (destination === undefined) return 'deleted';
  if (!destination.isEnabled) return 'paused';
  if (destination.configVersion !== run.configVersion) return 'config_changed';
  return undefined;
}

function locationOf(destination: Destination): BucketLocation {
  return {
    provider: destination.provider,
    bucket: destination.bucket,
    region: destination.region,
    endpoint: destination.endpoint,
    pathPrefix: destination.pathPrefix,
  };
}

/** Thrown inside a window when the run must stop: the destination changed or the lease was lost. */
class StopSignal {
  constructor(readonly reason: StopReason) {}
}

/** Thrown inside a window when the run's time is up: the window continues in a later invocation. */
class OutOfTime {}

/** Options of {@link writeWindow}. */
export interface WriteWindowOptions {
  /**
   * Epoch ms after which no further file is started (the invocation's own limit, from the Lambda context);
   * the earlier of this and the run's `deadlineMs` applies. @default the run's `deadlineMs`
   */
  deadlineMs?: number;
}

/**
 * WriteWindow: one Map iteration, in the writer Lambda: a span of event windows, or the day's snapshot.
 * 1. Read the destination: deleted, paused or a changed `configVersion` → `stopped` (not a failure).
 * 2. Open the secret (only the writer decrypts it) and build the bucket writer for the location.
 * 3. Walk the windows in order (a snapshot is one window). A window already complete (its progress says
 *    so, for this `configVersion`) is skipped; one begun earlier continues from its next file number and the
 *    source position after its last line, so resumed files are byte-identical to one pass.
 * 4. Cut each window into files of at most 50,000 lines, `<dataset>-<fromMs>-<toMs>-NNNN.jsonl.gz` or
 *    `subscribers-NNNN.jsonl.gz`. Before a file with a new number, record it as the window's highest
 *    (`maxFile`); after each file, save the progress (file number, position, totals). Both saves are fenced
 *    by the lease and by the destination still wanting the files: a pause, delete or move (or another run
 *    taking over) stops the writer before its next file.
 * 5. At the end of a window, files numbered above the last one written (left by an earlier, longer
 *    attempt) are overwritten with zero-line files; a snapshot then writes `_SUCCESS`, last; the window is
 *    saved complete. An empty window writes no file and saves nothing (reading it again is cheap).
 * 6. Once the deadline passed (after at least one file or window), no new file is started: `partial`.
 * Memory is bounded by an upload part and a few pages, not by the window. Errors are thrown with a
 * classified name (see errors.ts); a failed upload leaves no object behind.
 */
export async function writeWindow(
  input: WriteWindowInput,
  injected: Partial<EngineDeps> = {},
  options: WriteWindowOptions = {},
): Promise<WindowResult> {
  const deps = resolveDeps(injected);
  const { run, item } = input;
  const result: WindowResult = baseResult(item);
  const deadlineMs = Math.min(run.deadlineMs, options.deadlineMs ?? Number.POSITIVE_INFINITY);
  let writer: ClosableBucketWriter | undefined;
  try {
    const destination = await deps.controlStore.getDestination(run.workspaceId, run.destinationId);
    const reason = stopReasonOf(destination, run);
    if (reason !== undefined || destination === undefined) return stopped(result, reason ?? 'deleted');

    const secretAccessKey = await deps.sealer.open(destination.secret, {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
    });
    const bucket = deps.bucketWriterFactory(locationOf(destination), {
      accessKeyId: destination.accessKeyId,
      secretAccessKey,
    });
    writer = bucket;
    const stored = await deps.cursors.getProgress(run.workspaceId, run.destinationId);
    const state = { units: 0 };
    const prefix = destination.pathPrefix;
    const windows: (() => Promise<void>)[] = [];
    if (item.kind === 'events') {
      const dataset = item.dataset;
      for (const window of spanWindows(item)) {
        windows.push(async () => {
          await writeOne(
            windowKey(window),
            (index) => eventFileKey(prefix, dataset, window, index),
            (afterKey) =>
              deps.eventSource.readWindow(run.workspaceId, dataset, window.fromMs, window.toMs, afterKey),
          );
          result.doneThroughMs = window.toMs;
        });
      }
    } else {
      const date = item.date;
      windows.push(() =>
        writeOne(
          date,
          (index) => snapshotFileKey(prefix, date, index),
          (afterKey) => deps.eventSource.readSubscribers(run.workspaceId, afterKey),
          (line) => withSnapshotDate(line, date),
          snapshotSuccessKey(prefix, date),
        ),
      );
    }

    /** Writes (or continues) one window; throws StopSignal or OutOfTime. */
    async function writeOne(
      window: string,
      keyOf: (index: number) => string,
      read: (afterKey: string | undefined) => AsyncIterable<SourcePage>,
      map?: (line: string) => string,
      successKey?: string,
    ): Promise<void> {
      const earlier = stored.get(progressKey(item.dataset, window));
      const progress: WindowProgress =
        earlier !== undefined && earlier.configVersion === run.configVersion
          ? { ...earlier, runId: run.runId }
          : {
              dataset: item.dataset,
              window,
              configVersion: run.configVersion,
              nextFile: 0,
              maxFile: -1,
              rows: 0,
              files: 0,
              bytes: 0,
              done: false,
              runId: run.runId,
            };
      if (progress.done) return;
      const save = async () => stopOn(await deps.cursors.saveProgress(fenceOf(run), progress, deps.now()));
      const lines = new LineCursor(read(progress.lastKey), map);
      try {
        while (await lines.hasMore()) {
          if (state.units > 0 && deps.now().getTime() >= deadlineMs) throw new OutOfTime();
          if (progress.nextFile > progress.maxFile) {
            progress.maxFile = progress.nextFile;
            await save();
          }
          const file = await bucket.writeFile(keyOf(progress.nextFile), lines.take(MAX_LINES_PER_FILE));
          progress.nextFile += 1;
          if (lines.lastKey !== undefined) progress.lastKey = lines.lastKey;
          progress.files += 1;
          progress.rows += file.lines;
          progress.bytes += file.bytes;
          result.files += 1;
          result.rows += file.lines;
          result.bytes += file.bytes;
          state.units += 1;
          if (await lines.hasMore()) await save();
        }
      } finally {
        await lines.close().catch(() => undefined);
      }
      // Leftovers of an earlier attempt that had more files: overwritten, so none is readable as data.
      for (let index = progress.nextFile; index <= progress.maxFile; index++) {
        await bucket.writeFile(keyOf(index), [], { empty: true });
      }
      if (successKey !== undefined) {
        // The last check before `_SUCCESS`: the destination still wants this snapshot.
        await save();
        await bucket.writeMarker(successKey, '');
      }
      progress.done = true;
      if (progress.maxFile >= 0 || successKey !== undefined) await save();
      state.units += 1;
    }

    for (const write of windows) {
      if (state.units > 0 && deps.now().getTime() >= deadlineMs) throw new OutOfTime();
      await write();
    }
    return result;
  } catch (error) {
    if (error instanceof OutOfTime) return { ...result, status: 'partial' };
    if (error instanceof StopSignal) {
      if (error.reason === 'lease_lost') return stopped(result, 'lease_lost');
      const destination = await deps.controlStore
        .getDestination(run.workspaceId, run.destinationId)
        .catch(() => undefined);
      return stopped(result, stopReasonOf(destination, run) ?? 'config_changed');
    }
    throw classifyEngineError(error);
  } finally {
    writer?.close?.();
  }
}

/** The fence of a writer's progress: the run's lease and `configVersion`. */
function fenceOf(run: RunRef) {
  return {
    lease: { workspaceId: run.workspaceId, destinationId: run.destinationId, token: run.leaseToken },
    configVersion: run.configVersion,
  };
}

function stopOn(outcome: ProgressSaveOutcome): void {
  if (outcome === 'lease_lost') throw new StopSignal('lease_lost');
  if (outcome === 'destination_changed') throw new StopSignal('config_changed');
}

function baseResult(item: WorkItem): WindowResult {
  return item.kind === 'events'
    ? {
        dataset: item.dataset,
        kind: 'events',
        fromMs: item.fromMs,
        toMs: item.toMs,
        status: 'written',
        doneThroughMs: item.fromMs,
        rows: 0,
        files: 0,
        bytes: 0,
      }
    : {
        dataset: 'subscribers',
        kind: 'snapshot',
        date: item.date,
        status: 'written',
        rows: 0,
        files: 0,
        bytes: 0,
      };
}

function stopped(result: WindowResult, reason: StopReason): WindowResult {
  return { ...result, status: 'stopped', stopReason: reason };
}
