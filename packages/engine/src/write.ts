import type { ProgressCount, ProgressSaveOutcome, WindowProgress } from '@sluice/control';
import { progressKey } from '@sluice/control';
import {
  type BucketLocation,
  buildManifest,
  currentRowKeyOf,
  type Destination,
  type EventDataset,
  eventFileKey,
  forEachConcurrently,
  type IncludedOrganization,
  includesChildren,
  fileFormatOf,
  fileLineOf,
  type ManifestFile,
  type ManifestInput,
  manifestKey,
  MAX_LINES_PER_FILE,
  layoutOf,
  organizationIds,
  organizationIntervals,
  RUN_HOUR_MAX_LINES_PER_FILE,
  runHourFileKey,
  runHourManifestKey,
  runHourSlotMs,
  schemaObjects,
  snapshotFileKey,
  snapshotSuccessKey,
  serializeManifest,
  spanWindows,
  type Window,
  windowKey,
  withSnapshotDate,
} from '@sluice/core';
import type { EventPage, SourcePage } from '@sluice/eventlog';
import { destinationCredentials } from '@sluice/sinks';
import {
  CHILDREN_WRITTEN_AT_ONCE,
  type ClosableBucketWriter,
  type EngineDeps,
  ORGANIZATION_CHECKS_AT_ONCE,
  resolveDeps,
} from './deps.js';
import { classifyEngineError } from './errors.js';
import { withPlannedOrganizations } from './item-organizations.js';
import { latestPerKey, lineKeyOf } from './latest-per-key.js';
import type { RunRef, StopReason, WindowResult, WorkItem, WriteWindowInput } from './payloads.js';

/**
 * Pulls lines one at a time out of pages, so files can be cut at any line count; remembers the last position.
 * With recorded times (event pages) it is bounded: lines recorded after {@link LineCursor.until} belong to a
 * later window, so one pass over a span serves its windows in turn.
 */
class LineCursor {
  private page: SourcePage & { recordedMs?: number[] } = { lines: [], keys: [] };
  private index = 0;
  private done = false;
  private untilMs = Number.POSITIVE_INFINITY;
  private readonly pages: AsyncIterator<SourcePage & { recordedMs?: number[] }>;
  /** The position of the last line taken (undefined before the first). */
  lastKey: string | undefined;

  constructor(
    pages: AsyncIterable<SourcePage & { recordedMs?: number[] }>,
    private readonly map: (line: string) => string = (line) => line,
  ) {
    this.pages = pages[Symbol.asyncIterator]();
  }

  /** Bounds the lines to those recorded at or before `toMs` (the current window's end). */
  until(toMs: number): void {
    this.untilMs = toMs;
  }

  /** The end (exclusive) of the current page's lines inside the bound. */
  private boundedEnd(): number {
    const times = this.page.recordedMs;
    if (times === undefined) return this.page.lines.length;
    let end = this.index;
    while (end < times.length && (times[end] as number) <= this.untilMs) end++;
    return end;
  }

  /** True when another line follows inside the bound; fetches the next non-empty page if needed. */
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
    const times = this.page.recordedMs;
    return times === undefined || (times[this.index] as number) <= this.untilMs;
  }

  /** The next at most `limit` lines inside the bound (the encoder batches them). */
  async *take(limit: number): AsyncGenerator<string> {
    let taken = 0;
    while (taken < limit && (await this.hasMore())) {
      const end = Math.min(this.boundedEnd(), this.index + (limit - taken));
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
    encryption: destination.encryption ?? null,
  };
}

/** Thrown inside a window when the run must stop: the destination changed or the lease was lost. */
class StopSignal {
  constructor(readonly reason: StopReason) {}
}

/** Thrown inside a window when the run's time is up: the window continues in a later invocation. */
class OutOfTime {}

/** Thrown by a child organisation's writing when another one already failed: it stops before its next file. */
class Halted {}

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
 * 2. Open the secret (only the writer decrypts it), or name the role to assume (its keys come from STS on the
 *    first request, cached by that window's client only), and build the bucket writer for the location.
 * 3. Walk the windows in order (a snapshot is one window). A window already complete (its progress says
 *    so, for this `configVersion`) is skipped; one begun earlier continues from its next file number and the
 *    source position after its last line, so resumed files are byte-identical to one pass.
 * 4. Cut each window into files of at most 50,000 lines, `<dataset>-<fromMs>-<toMs>-NNNN.jsonl.gz` or
 *    `subscribers-NNNN.jsonl.gz` (`.parquet` in the Parquet format the item was planned with). Before a
 *    file with a new number, record it as the window's highest (`maxFile`); after each file, save the progress (file number, position, totals). Both saves are fenced
 *    by the lease and by the destination still wanting the files: a pause, delete or move (or another run
 *    taking over) stops the writer before its next file.
 * 5. At the end of a window, files numbered above the last one written (left by an earlier, longer
 *    attempt) are overwritten with zero-line files; then the window's manifest is written (key, rows, bytes
 *    and SHA-256 of every file, kept in the progress so a window resumed by another invocation lists the
 *    earlier files too): `_sluice/manifests/...` for an event window, `_SUCCESS` (last) for a snapshot; the
 *    window is saved complete. An empty window writes no file, no manifest and saves nothing.
 * 6. Once the deadline passed (after at least one file or window), no new file is started: `partial`.
 * Memory is bounded by an upload part and a few pages per organisation written at once (at most
 * {@link CHILDREN_WRITTEN_AT_ONCE} children, then the export's own workspace), not by the window. Errors are
 * thrown with a classified name (see errors.ts); a failed upload leaves no object behind.
 */
export async function writeWindow(
  input: WriteWindowInput,
  injected: Partial<EngineDeps> = {},
  options: WriteWindowOptions = {},
): Promise<WindowResult> {
  const deps = resolveDeps(injected);
  const startedMs = deps.now().getTime();
  const result = await writeSpan(input, deps, options);
  // The time this invocation spent: Commit sums it per dataset for the run's `stats` (the job history).
  return { ...result, durationMs: Math.max(0, deps.now().getTime() - startedMs) };
}

/** {@link writeWindow} without its timing: the destination checked, a window writer opened and run. */
async function writeSpan(
  input: WriteWindowInput,
  deps: EngineDeps,
  options: WriteWindowOptions,
): Promise<WindowResult> {
  const { run, item } = input;
  const result: WindowResult = baseResult(item);
  let writer: WindowWriter | undefined;
  try {
    const destination = await deps.controlStore.getDestination(run.workspaceId, run.destinationId);
    const reason = stopReasonOf(destination, run);
    if (reason !== undefined || destination === undefined) return stopped(result, reason ?? 'deleted');
    const planned = await withPlannedOrganizations(run, item, destination, deps);
    if (planned === undefined) return stopped(result, 'lease_lost');
    writer = await openWindowWriter({ run, item: planned }, destination, deps, options, result);
    if (item.schema === true && run.backfillId === undefined) await writer.writeSchemaObjects(destination);
    if (planned.kind === 'events') await writer.writeEvents(planned);
    else await writer.writeSnapshot(planned);
    return result;
  } catch (error) {
    return outcomeOfThrown(error, result, run, deps);
  } finally {
    writer?.close();
  }
}

/** The result of a window that threw: `partial` when out of time, `stopped` with its reason, else rethrown. */
async function outcomeOfThrown(
  error: unknown,
  result: WindowResult,
  run: RunRef,
  deps: EngineDeps,
): Promise<WindowResult> {
  if (error instanceof OutOfTime) return { ...result, status: 'partial' };
  if (error instanceof StopSignal) {
    if (error.reason === 'lease_lost' || error.reason === 'cancelled') return stopped(result, error.reason);
    const destination = await deps.controlStore
      .getDestination(run.workspaceId, run.destinationId)
      .catch(() => undefined);
    return stopped(result, stopReasonOf(destination, run) ?? 'config_changed');
  }
  throw classifyEngineError(error);
}

/**
 * Opens the destination's bucket (its secret opened, or its role named), loads the item's stored progress and
 * returns the {@link WindowWriter} over them.
 */
async function openWindowWriter(
  input: WriteWindowInput,
  destination: Destination,
  deps: EngineDeps,
  options: WriteWindowOptions,
  result: WindowResult,
): Promise<WindowWriter> {
  const { run, item } = input;
  const credentials = await destinationCredentials(destination, (secret) =>
    deps.sealer.open(
      secret,
      { workspaceId: run.workspaceId, destinationId: run.destinationId },
      { configVersion: run.configVersion },
    ),
  );
  const bucket = deps.bucketWriterFactory(locationOf(destination), credentials);
  try {
    const book = progressBookOf(run, item, deps);
    const stored = await book.load();
    const deadlineMs = Math.min(run.deadlineMs, options.deadlineMs ?? Number.POSITIVE_INFINITY);
    return new WindowWriter(input, destination.pathPrefix, deps, bucket, book, stored, deadlineMs, result);
  } catch (error) {
    bucket.close?.();
    throw error;
  }
}

/**
 * Whether a fenced save came after an organisation's last upload: every upload needs one before it. One per
 * organisation written, so children written at once each prove the lease before their own next file.
 */
interface UploadFence {
  checked: boolean;
}

/** Where one window's files go: the key of file `index`, and its manifest (or a snapshot's `_SUCCESS`). */
interface WindowTarget {
  keyOf: (index: number) => string;
  manifest: WindowManifest;
}

/** How a window ends when it is complete: the next window's first file saved with it, and its end. */
interface WindowEnd {
  /**
   * May return the next window's progress with its first file recorded (`maxFile` 0): it is saved in the same
   * transaction as this window's completion, which saves that window its own first save.
   */
  startNext?: () => Promise<WindowProgress | undefined>;
  /** The end of the span's last finished window once this one is (the export's own windows only). */
  finishedMs?: number;
}

/**
 * Writes one work item's windows into an opened bucket: the steps of {@link writeWindow} from step 3 on. It
 * keeps the invocation's figures (`result`), the progress as last saved, and how far the span's own windows
 * are finished.
 */
class WindowWriter {
  private readonly run: RunRef;
  private readonly item: WorkItem;
  /** Files and windows finished in this invocation: the deadline stops the writer only after one. */
  private units = 0;
  /** Set once an organisation's writing failed: the others written at once stop before their next file. */
  private failure: { error: unknown } | undefined;
  /** Each window's progress as last saved: a save counts the files written since into the run record. */
  private readonly saved = new Map<string, WindowProgress>();
  /** Events: the end of the span's last window finished (written, empty, or done before), and as recorded. */
  private readonly reach = {
    finishedMs: undefined as number | undefined,
    recordedMs: undefined as number | undefined,
  };
  /** The format the windows were planned with (a change of the destination's applies from later windows). */
  private readonly fileFormat: ReturnType<typeof fileFormatOf>;
  /** The layout the windows were planned with names their files and sets how many lines a file takes. */
  private readonly layout: ReturnType<typeof layoutOf>;
  private readonly maxLines: number;

  constructor(
    input: WriteWindowInput,
    private readonly prefix: Destination['pathPrefix'],
    private readonly deps: EngineDeps,
    private readonly bucket: ClosableBucketWriter,
    private readonly book: ProgressBook,
    private readonly stored: Map<string, WindowProgress>,
    private readonly deadlineMs: number,
    private readonly result: WindowResult,
  ) {
    this.run = input.run;
    this.item = input.item;
    this.fileFormat = fileFormatOf(this.item.format);
    this.layout = this.item.kind === 'events' ? layoutOf(this.item) : 'date';
    this.maxLines = this.layout === 'run_hour' ? RUN_HOUR_MAX_LINES_PER_FILE : MAX_LINES_PER_FILE;
  }

  close(): void {
    this.bucket.close?.();
  }

  /** The dataset's schema and reading recipes beside the data (deterministic: written again, same bytes). */
  async writeSchemaObjects(destination: Destination): Promise<void> {
    const objects = schemaObjects({
      dataset: this.item.dataset,
      layout: layoutOf(destination),
      format: destination.format === 'parquet' ? 'parquet' : 'jsonl',
      bucket: destination.bucket,
      pathPrefix: destination.pathPrefix,
      scheme: destination.provider === 'gcs' ? 'gs' : 's3',
      partitioned: includesChildren(destination),
    });
    for (const object of objects) await this.bucket.writeMarker(object.key, object.body);
  }

  /**
   * An event span: the organisations it reads, as planned, are the workspace's own rows (unpartitioned), or
   * each included organisation in its own partition. Children with no rows in the span are found at once and
   * skipped; the others are written {@link CHILDREN_WRITTEN_AT_ONCE} at a time, and the export's own workspace
   * last, so that the window's own progress, saved complete last, says that every organisation's files of the
   * window are complete (Commit reads it so).
   */
  async writeEvents(item: EventItem): Promise<void> {
    const windows = spanWindows(item);
    const children = await childrenWithRows(item.organizations ?? [], this.run, item, this.deps, (id) =>
      windows.some((window) =>
        this.stored.has(progressKey(item.dataset, unitKey(window, id, this.run.workspaceId))),
      ),
    );
    try {
      await forEachConcurrently(children, CHILDREN_WRITTEN_AT_ONCE, async (organizationId) => {
        try {
          await this.writeOrganization(item, organizationId);
        } catch (error) {
          if (!(error instanceof Halted)) this.failure ??= { error };
          throw error;
        }
      }).catch((error: unknown) => {
        // The first organisation's failure, never a `Halted` of one stopped because of it.
        throw this.failure?.error ?? error;
      });
      await this.writeOrganization(item, this.run.workspaceId);
    } finally {
      await this.recordReach();
    }
  }

  /** The day's subscriber snapshot: one window, continued from its last position. */
  async writeSnapshot(item: Extract<WorkItem, { kind: 'snapshot' }>): Promise<void> {
    const date = item.date;
    const progress = this.progressOf(date);
    if (progress.done) return;
    const lines = new LineCursor(
      this.deps.eventSource.readSubscribers(this.run.workspaceId, progress.lastKey),
      (line) => withSnapshotDate(line, date),
    );
    try {
      await this.writeWindowFiles(
        progress,
        {
          keyOf: (index) => snapshotFileKey(this.prefix, date, index, this.fileFormat),
          manifest: {
            kind: 'snapshot',
            key: snapshotSuccessKey(this.prefix, date),
            of: (files) => ({ dataset: 'subscribers', date, format: this.fileFormat.format, files }),
          },
        },
        lines,
        { checked: false },
      );
    } finally {
      await lines.close().catch(() => undefined);
    }
  }

  /**
   * Writes (or continues) the files of one organisation, window by window. The span is read in one pass from
   * its first window to write, cut into windows by recorded time: a window already complete, or one begun
   * earlier, starts a new pass at its own position (a current-row dataset, a window at a time).
   */
  private async writeOrganization(item: EventItem, organizationId: string): Promise<void> {
    const own = organizationId === this.run.workspaceId;
    const windows = spanWindows(item);
    const progress = windows.map((window) =>
      this.progressOf(unitKey(window, organizationId, this.run.workspaceId)),
    );
    const fence: UploadFence = { checked: false };
    let lines: LineCursor | undefined;
    try {
      for (const [index, window] of windows.entries()) {
        this.checkRunning();
        const current = progress[index] as WindowProgress;
        if (current.done) {
          await lines?.close();
          lines = undefined;
          if (own) this.reach.finishedMs = window.toMs;
          continue;
        }
        if (
          lines === undefined ||
          current.lastKey !== undefined ||
          currentRowKeyOf(item.dataset) !== undefined
        ) {
          await lines?.close();
          lines = this.readPass(item, organizationId, window, current.lastKey);
        }
        const cursor = lines;
        cursor.until(window.toMs);
        const next = progress[index + 1];
        const following = windows[index + 1];
        await this.writeWindowFiles(current, this.eventTarget(item, window, organizationId), cursor, fence, {
          startNext: async () => {
            // Only a fresh next window, with rows, while there is time to start it.
            if (next === undefined || following === undefined || next.done || next.maxFile >= 0) return;
            if (this.outOfTime()) return;
            cursor.until(following.toMs);
            if (!(await cursor.hasMore())) return;
            next.maxFile = 0;
            return next;
          },
          // A window is finished (a backfill shows it) once the export's own files of it are.
          ...(own ? { finishedMs: window.toMs } : {}),
        });
        if (own) {
          this.result.doneThroughMs = window.toMs;
          this.reach.finishedMs = window.toMs;
        }
      }
    } finally {
      await (lines as LineCursor | undefined)?.close().catch(() => undefined);
    }
  }

  /**
   * A read of an organisation's rows from `window` (after `afterKey`, when resumed) to the span's end (a
   * current-row dataset: the window's end, keeping each key's last row). Rows recorded at or before the
   * export's exact start, or outside the organisation's inclusion, are not read (the first window keeps its
   * name).
   */
  private readPass(
    item: EventItem,
    organizationId: string,
    window: Window,
    afterKey: string | undefined,
  ): LineCursor {
    const { dataset } = item;
    const keyField = currentRowKeyOf(dataset);
    const entries = item.organizations ?? [{ id: this.run.workspaceId }];
    const toMs = keyField === undefined ? item.toMs : window.toMs;
    const intervals = organizationIntervals(
      entries,
      organizationId,
      { fromMs: window.fromMs, toMs },
      item.startMs,
    );
    const read = (after?: string) => readIntervals(this.deps, organizationId, dataset, intervals, after);
    return new LineCursor(
      keyField === undefined ? read(afterKey) : latestPerKey(read, lineKeyOf(keyField), afterKey),
      fileLineOf(dataset),
    );
  }

  /** The keys of an organisation's files of an event window and of its manifest, in the planned layout. */
  private eventTarget(item: EventItem, window: Window, organizationId: string): WindowTarget {
    const { dataset } = item;
    const { prefix, fileFormat, layout } = this;
    const partition = item.organizations !== undefined ? organizationId : undefined;
    const fileOwner = { exportId: this.run.destinationId, organizationId };
    return {
      keyOf: (file) =>
        layout === 'run_hour'
          ? runHourFileKey(prefix, dataset, window, file, fileFormat, fileOwner)
          : eventFileKey(prefix, dataset, window, file, fileFormat, partition),
      manifest: {
        kind: 'events',
        key:
          layout === 'run_hour'
            ? runHourManifestKey(prefix, dataset, window, fileOwner)
            : manifestKey(prefix, dataset, window, partition),
        of: (files) => ({
          dataset,
          window,
          format: fileFormat.format,
          files,
          ...(layout === 'run_hour' ? { layout, slotMs: runHourSlotMs(window) } : {}),
          ...(partition !== undefined ? { organizationId: partition } : {}),
        }),
      },
    };
  }

  /**
   * Writes (or continues) one window from `lines`: its files, the leftovers of a longer attempt blanked, its
   * manifest, its completion saved. Throws StopSignal, OutOfTime or Halted.
   */
  private async writeWindowFiles(
    progress: WindowProgress,
    target: WindowTarget,
    lines: LineCursor,
    fence: UploadFence,
    end: WindowEnd = {},
  ): Promise<void> {
    // Progress saved before manifests existed has no figures for its earlier files: none are kept then.
    const figures = progress.fileFigures ?? (progress.nextFile === 0 ? [] : undefined);
    if (figures !== undefined) progress.fileFigures = figures;
    await this.writeFiles(progress, target, lines, fence, figures);
    await this.blankLeftovers(progress, target, fence, figures);
    const snapshot = target.manifest.kind === 'snapshot';
    if (progress.maxFile >= 0 || snapshot) await this.writeManifest(progress, target, fence);
    progress.done = true;
    if (progress.maxFile >= 0 || snapshot) {
      const next = await end.startNext?.();
      await this.save(next !== undefined ? [progress, next] : [progress], fence, end.finishedMs);
    }
    this.units += 1;
  }

  /**
   * The window's files from its next number on, each at most `maxLines` lines: before a file with a new number
   * it is recorded as the window's highest, after each the progress is saved (while lines remain).
   */
  private async writeFiles(
    progress: WindowProgress,
    target: WindowTarget,
    lines: LineCursor,
    fence: UploadFence,
    figures: FileFigures | undefined,
  ): Promise<void> {
    while (await lines.hasMore()) {
      this.checkRunning();
      if (progress.nextFile > progress.maxFile) {
        progress.maxFile = progress.nextFile;
        await this.save([progress], fence);
      }
      await this.checkBeforeUpload(progress, fence);
      const file = await this.bucket.writeFile(target.keyOf(progress.nextFile), lines.take(this.maxLines), {
        format: { file: this.fileFormat, dataset: this.item.dataset },
      });
      if (figures !== undefined) {
        figures[progress.nextFile] = { rows: file.lines, bytes: file.bytes, sha256: file.sha256 };
        figures.length = progress.nextFile + 1;
      }
      progress.nextFile += 1;
      if (lines.lastKey !== undefined) progress.lastKey = lines.lastKey;
      progress.files += 1;
      progress.rows += file.lines;
      progress.bytes += file.bytes;
      this.result.files += 1;
      this.result.rows += file.lines;
      this.result.bytes += file.bytes;
      this.units += 1;
      if (await lines.hasMore()) await this.save([progress], fence);
    }
  }

  /** Leftovers of an earlier attempt that had more files: overwritten, so none is readable as data. */
  private async blankLeftovers(
    progress: WindowProgress,
    target: WindowTarget,
    fence: UploadFence,
    figures: FileFigures | undefined,
  ): Promise<void> {
    for (let index = progress.nextFile; index <= progress.maxFile; index++) {
      await this.checkBeforeUpload(progress, fence);
      const file = await this.bucket.writeFile(target.keyOf(index), [], {
        empty: true,
        format: { file: this.fileFormat, dataset: this.item.dataset },
      });
      if (figures !== undefined) figures[index] = { rows: 0, bytes: file.bytes, sha256: file.sha256 };
    }
  }

  /** The window's manifest, or a snapshot's `_SUCCESS` (empty for a window begun before manifests existed). */
  private async writeManifest(
    progress: WindowProgress,
    target: WindowTarget,
    fence: UploadFence,
  ): Promise<void> {
    const { manifest } = target;
    // Undefined for a window begun before manifests existed: no manifest then (an empty `_SUCCESS`).
    const files = manifestFiles(progress, target.keyOf);
    // The last check before the manifest (a snapshot's `_SUCCESS`): the destination still wants it.
    await this.checkBeforeUpload(progress, fence);
    if (files !== undefined) {
      await this.bucket.writeMarker(manifest.key, serializeManifest(buildManifest(manifest.of(files))));
    } else if (manifest.kind === 'snapshot') {
      await this.bucket.writeMarker(manifest.key, '');
    }
  }

  /** A window's stored progress when of the run's `configVersion` (taken over by this run), else a fresh one. */
  private progressOf(window: string): WindowProgress {
    const { run, item } = this;
    const earlier = this.stored.get(progressKey(item.dataset, window));
    return earlier !== undefined && earlier.configVersion === run.configVersion
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
  }

  /**
   * Saves progress, fenced, counting the first entry's new files (a save proves the lease for the next upload
   * of `fence`'s organisation); stops on a lost lease or a changed destination.
   */
  private async save(
    progress: WindowProgress[],
    fence: UploadFence,
    finishedMs = this.reach.finishedMs,
  ): Promise<void> {
    const [first] = progress as [WindowProgress];
    const before =
      this.saved.get(first.window) ?? this.stored.get(progressKey(this.item.dataset, first.window));
    const count = countSince(this.run, before, first);
    stopOn(await this.book.save(progress, this.deps.now(), count, finishedMs));
    for (const entry of progress) this.saved.set(entry.window, { ...entry });
    this.reach.recordedMs = finishedMs;
    fence.checked = true;
  }

  /**
   * Before an upload: unless a save came after the organisation's last upload, save `progress` again. The
   * save is fenced by the lease (a backfill's slot) and the destination, so a writer that lost them uploads
   * nothing more: not a resumed file, a blanked leftover, a manifest or a `_SUCCESS`.
   */
  private async checkBeforeUpload(progress: WindowProgress, fence: UploadFence): Promise<void> {
    if (!fence.checked) await this.save([progress], fence);
    fence.checked = false;
  }

  /** Windows finished since the last save (empty ones save nothing): recorded once, on the way out. */
  private async recordReach(): Promise<void> {
    const { finishedMs, recordedMs } = this.reach;
    if (finishedMs !== undefined && finishedMs !== recordedMs) {
      await this.book.reach(finishedMs, this.deps.now()).catch(() => undefined);
    }
  }

  /** Once the deadline passed, after at least one file or window. */
  private outOfTime(): boolean {
    return this.units > 0 && this.deps.now().getTime() >= this.deadlineMs;
  }

  /** Before a file or window: throws when another organisation's writing failed, or the time is up. */
  private checkRunning(): void {
    if (this.failure !== undefined) throw new Halted();
    if (this.outOfTime()) throw new OutOfTime();
  }
}

type EventItem = Extract<WorkItem, { kind: 'events' }>;
type FileFigures = NonNullable<WindowProgress['fileFigures']>;

/**
 * The progress key of one organisation's files of a window: the window's own (`<fromMs>-<toMs>`) for the
 * export's workspace, `<fromMs>-<toMs>#<organizationId>` for a child's.
 */
export function unitKey(window: Window, organizationId: string, ownId: string): string {
  return organizationId === ownId ? windowKey(window) : `${windowKey(window)}#${organizationId}`;
}

/**
 * The child organisations of a span that have rows in it (or a window begun earlier: `begun`), in the
 * planned order: each asks the event source whether it holds a row in its intervals, at most
 * {@link ORGANIZATION_CHECKS_AT_ONCE} at once, so the children without rows cost no sequential reads.
 */
async function childrenWithRows(
  entries: readonly IncludedOrganization[],
  run: RunRef,
  item: EventItem,
  deps: Pick<EngineDeps, 'eventSource'>,
  begun: (organizationId: string) => boolean,
): Promise<string[]> {
  const ids = organizationIds(entries).filter((id) => id !== run.workspaceId);
  const withRows = new Set<string>();
  await forEachConcurrently(ids, ORGANIZATION_CHECKS_AT_ONCE, async (id) => {
    if (begun(id)) {
      withRows.add(id);
      return;
    }
    for (const interval of organizationIntervals(entries, id, item, item.startMs)) {
      if (await deps.eventSource.hasRowsAfter(id, item.dataset, interval.fromMs, interval.toMs)) {
        withRows.add(id);
        return;
      }
    }
  });
  return ids.filter((id) => withRows.has(id));
}

/**
 * An organisation's rows of a dataset over `intervals` (in order, from {@link organizationIntervals}): one
 * read from the first interval's start to the last one's end, keeping only the lines recorded inside an
 * interval (a child unlinked and linked again inside a span has two). Positions are those of the source, so a
 * resumed read (`afterKey`) continues the same sequence.
 */
async function* readIntervals(
  deps: Pick<EngineDeps, 'eventSource'>,
  organizationId: string,
  dataset: EventDataset,
  intervals: readonly Window[],
  afterKey?: string,
): AsyncGenerator<EventPage> {
  const [first, last] = [intervals[0], intervals.at(-1)];
  if (first === undefined || last === undefined) return;
  const pages = deps.eventSource.readWindow(organizationId, dataset, first.fromMs, last.toMs, afterKey);
  if (intervals.length === 1) {
    yield* pages;
    return;
  }
  const inside = (ms: number) => intervals.some((interval) => interval.fromMs < ms && ms <= interval.toMs);
  for await (const page of pages) {
    const kept: EventPage = { lines: [], keys: [], recordedMs: [] };
    page.recordedMs.forEach((ms, index) => {
      if (!inside(ms)) return;
      kept.lines.push(page.lines[index] as string);
      kept.keys.push(page.keys[index] as string);
      kept.recordedMs.push(ms);
    });
    if (kept.lines.length > 0) yield kept;
  }
}

/** Where a window's manifest goes (an event window's manifest, or a snapshot's `_SUCCESS`) and what it says. */
interface WindowManifest {
  kind: 'events' | 'snapshot';
  key: string;
  of: (files: ManifestFile[]) => ManifestInput;
}

/**
 * The files of a window as its manifest lists them: every number up to `maxFile` (leftovers overwritten
 * with zero-line files included, since they are objects a loader finds), from the figures kept in the
 * progress; undefined when a figure is missing (a window begun before manifests were written).
 */
function manifestFiles(
  progress: WindowProgress,
  keyOf: (index: number) => string,
): ManifestFile[] | undefined {
  const files: ManifestFile[] = [];
  for (let index = 0; index <= progress.maxFile; index++) {
    const figures = progress.fileFigures?.[index];
    if (figures === undefined || figures === null) return undefined;
    files.push({ key: keyOf(index), ...figures });
  }
  return files;
}

/** Where a writer's window progress lives, and how its saves are fenced and counted. */
interface ProgressBook {
  load(): Promise<Map<string, WindowProgress>>;
  /** `finishedMs`: the end of the span's last finished window, when one is (a backfill shows it). */
  save(
    progress: WindowProgress[],
    now: Date,
    count: ProgressCount,
    finishedMs?: number,
  ): Promise<ProgressSaveOutcome | 'cancelled'>;
  /** Records the end of the span's last finished window alone (a backfill's; the regular export's: nothing). */
  reach(finishedMs: number, now: Date): Promise<void>;
}

/**
 * The regular export's progress (the destination's cursors, fenced by its lease, files counted into the
 * run record), or a backfill's (its own progress items, fenced by its slot token and by still running, files
 * counted into the backfill's per-dataset progress). Either way also fenced by the destination still
 * wanting the files (`configVersion`, enabled).
 */
function progressBookOf(run: RunRef, item: WorkItem, deps: EngineDeps): ProgressBook {
  const { workspaceId, destinationId } = run;
  const backfillId = run.backfillId;
  if (backfillId !== undefined) {
    const fence = {
      workspaceId,
      destinationId,
      backfillId,
      token: run.leaseToken,
      configVersion: run.configVersion,
    };
    const reachOf = (finishedMs: number | undefined) =>
      item.kind === 'events' && finishedMs !== undefined
        ? { dataset: item.dataset, spanFromMs: item.fromMs, throughMs: finishedMs }
        : undefined;
    return {
      load: () => deps.backfills.getProgress(workspaceId, destinationId, backfillId),
      save: (progress, now, count, finishedMs) =>
        deps.backfills.saveProgress(fence, progress, now, count, reachOf(finishedMs)),
      reach: async (finishedMs, now) => {
        const reach = reachOf(finishedMs);
        if (reach !== undefined) await deps.backfills.saveReach(fence, reach, now);
      },
    };
  }
  const fence = {
    lease: { workspaceId, destinationId, token: run.leaseToken },
    configVersion: run.configVersion,
  };
  return {
    load: () => deps.cursors.getProgress(workspaceId, destinationId),
    save: (progress, now, count) => deps.cursors.saveProgress(fence, progress, now, count),
    reach: async () => undefined,
  };
}

/** The files `progress` gained since `before` (its last saved state, if of the run's `configVersion`). */
function countSince(
  run: RunRef,
  before: WindowProgress | undefined,
  progress: WindowProgress,
): ProgressCount {
  const base = before?.configVersion === run.configVersion ? before : undefined;
  return {
    run: {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
      id: run.runId,
      startedAt: run.startedAt,
    },
    previousNextFile: base?.nextFile ?? 0,
    rows: progress.rows - (base?.rows ?? 0),
    files: progress.files - (base?.files ?? 0),
    bytes: progress.bytes - (base?.bytes ?? 0),
  };
}

function stopOn(outcome: ProgressSaveOutcome | 'cancelled'): void {
  if (outcome === 'lease_lost') throw new StopSignal('lease_lost');
  if (outcome === 'cancelled') throw new StopSignal('cancelled');
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
