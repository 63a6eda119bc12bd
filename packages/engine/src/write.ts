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
  type ClosableBucketWriter,
  type EngineDeps,
  ORGANIZATION_CHECKS_AT_ONCE,
  resolveDeps,
} from './deps.js';
import { classifyEngineError } from './errors.js';
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
 * Memory is bounded by an upload part and a few pages, not by the window. Errors are thrown with a
 * classified name (see errors.ts); a failed upload leaves no object behind.
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

/** {@link writeWindow} without its timing. */
async function writeSpan(
  input: WriteWindowInput,
  deps: EngineDeps,
  options: WriteWindowOptions,
): Promise<WindowResult> {
  const { run, item } = input;
  const result: WindowResult = baseResult(item);
  const deadlineMs = Math.min(run.deadlineMs, options.deadlineMs ?? Number.POSITIVE_INFINITY);
  let writer: ClosableBucketWriter | undefined;
  let book: ProgressBook | undefined;
  /** Events: the end of the span's last window finished (written, empty, or done before), and as recorded. */
  const reach = { finishedMs: undefined as number | undefined, recordedMs: undefined as number | undefined };
  try {
    const destination = await deps.controlStore.getDestination(run.workspaceId, run.destinationId);
    const reason = stopReasonOf(destination, run);
    if (reason !== undefined || destination === undefined) return stopped(result, reason ?? 'deleted');

    const credentials = await destinationCredentials(destination, (secret) =>
      deps.sealer.open(
        secret,
        { workspaceId: run.workspaceId, destinationId: run.destinationId },
        { configVersion: run.configVersion },
      ),
    );
    const bucket = deps.bucketWriterFactory(locationOf(destination), credentials);
    writer = bucket;
    book = progressBookOf(run, item, deps);
    const stored = await book.load();
    const state = { units: 0 };
    const prefix = destination.pathPrefix;
    // The format the windows were planned with (a change of the destination's applies from later windows).
    const fileFormat = fileFormatOf(item.format);
    const format = { file: fileFormat, dataset: item.dataset };
    // The layout the windows were planned with names their files and sets how many lines a file takes.
    const layout = item.kind === 'events' ? layoutOf(item) : 'date';
    const maxLines = layout === 'run_hour' ? RUN_HOUR_MAX_LINES_PER_FILE : MAX_LINES_PER_FILE;
    if (item.schema === true && run.backfillId === undefined) {
      // The dataset's schema and reading recipes beside the data (deterministic: written again, same bytes).
      const objects = schemaObjects({
        dataset: item.dataset,
        layout: layoutOf(destination),
        format: destination.format === 'parquet' ? 'parquet' : 'jsonl',
        bucket: destination.bucket,
        pathPrefix: destination.pathPrefix,
        scheme: destination.provider === 'gcs' ? 'gs' : 's3',
        partitioned: includesChildren(destination),
      });
      for (const object of objects) await bucket.writeMarker(object.key, object.body);
    }
    const outOfTime = () => state.units > 0 && deps.now().getTime() >= deadlineMs;
    const progressOf = (window: string): WindowProgress => {
      const earlier = stored.get(progressKey(item.dataset, window));
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
    };
    // Each window's progress as last saved: a save counts the files written since into the run record.
    const saved = new Map<string, WindowProgress>();
    // Whether a fenced save came after this invocation's last upload: every upload needs one before it.
    const fence = { checked: false };
    const save = async (progress: WindowProgress[], finishedMs = reach.finishedMs) => {
      const [first] = progress as [WindowProgress];
      const before = saved.get(first.window) ?? stored.get(progressKey(item.dataset, first.window));
      const count = countSince(run, before, first);
      stopOn(await (book as ProgressBook).save(progress, deps.now(), count, finishedMs));
      for (const entry of progress) saved.set(entry.window, { ...entry });
      reach.recordedMs = finishedMs;
      fence.checked = true;
    };
    /**
     * Before an upload: unless a save came after the last upload, save `progress` again. The save is fenced
     * by the lease (a backfill's slot) and the destination, so a writer that lost them uploads nothing
     * more: not a resumed file, a blanked leftover, a manifest or a `_SUCCESS`.
     */
    const checkBeforeUpload = async (progress: WindowProgress) => {
      if (!fence.checked) await save([progress]);
      fence.checked = false;
    };

    /**
     * Writes (or continues) one window from `lines`; throws StopSignal or OutOfTime. `startNext`, when
     * given, may return the next window's progress with its first file recorded (`maxFile` 0): it is saved
     * in the same transaction as this window's completion, which saves that window its own first save.
     */
    async function writeOne(
      progress: WindowProgress,
      keyOf: (index: number) => string,
      lines: LineCursor,
      manifest: WindowManifest,
      startNext?: () => Promise<WindowProgress | undefined>,
      windowToMs?: number,
    ): Promise<void> {
      // Progress saved before manifests existed has no figures for its earlier files: none are kept then.
      const figures = progress.fileFigures ?? (progress.nextFile === 0 ? [] : undefined);
      if (figures !== undefined) progress.fileFigures = figures;
      while (await lines.hasMore()) {
        if (outOfTime()) throw new OutOfTime();
        if (progress.nextFile > progress.maxFile) {
          progress.maxFile = progress.nextFile;
          await save([progress]);
        }
        await checkBeforeUpload(progress);
        const file = await bucket.writeFile(keyOf(progress.nextFile), lines.take(maxLines), {
          format,
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
        result.files += 1;
        result.rows += file.lines;
        result.bytes += file.bytes;
        state.units += 1;
        if (await lines.hasMore()) await save([progress]);
      }
      // Leftovers of an earlier attempt that had more files: overwritten, so none is readable as data.
      for (let index = progress.nextFile; index <= progress.maxFile; index++) {
        await checkBeforeUpload(progress);
        const file = await bucket.writeFile(keyOf(index), [], { empty: true, format });
        if (figures !== undefined) figures[index] = { rows: 0, bytes: file.bytes, sha256: file.sha256 };
      }
      const snapshot = manifest.kind === 'snapshot';
      if (progress.maxFile >= 0 || snapshot) {
        // Undefined for a window begun before manifests existed: no manifest then (an empty `_SUCCESS`).
        const files = manifestFiles(progress, keyOf);
        // The last check before the manifest (a snapshot's `_SUCCESS`): the destination still wants it.
        await checkBeforeUpload(progress);
        if (files !== undefined) {
          await bucket.writeMarker(manifest.key, serializeManifest(buildManifest(manifest.of(files))));
        } else if (snapshot) {
          await bucket.writeMarker(manifest.key, '');
        }
      }
      progress.done = true;
      if (progress.maxFile >= 0 || snapshot) {
        const next = await startNext?.();
        await save(next !== undefined ? [progress, next] : [progress], windowToMs ?? reach.finishedMs);
      }
      state.units += 1;
    }

    if (item.kind === 'events') {
      const dataset = item.dataset;
      const windows = spanWindows(item);
      // A current-row dataset (message_events) is read a window at a time, keeping each message's last row.
      const keyField = currentRowKeyOf(dataset);
      // The organisations the span reads, as planned: the workspace's own rows (unpartitioned), or each
      // included organisation in its own partition. Children with no rows in the span are found at once
      // (a few concurrent Queries each) and skipped; the others are written one after the other, and the
      // export's own workspace last, so that the window's own progress, saved complete last, says that
      // every organisation's files of the window are complete (Commit reads it so).
      const entries = item.organizations ?? [{ id: run.workspaceId }];
      const partitioned = item.organizations !== undefined;
      const children = await childrenWithRows(entries, run, item, deps, (id) =>
        windows.some((window) => stored.has(progressKey(dataset, unitKey(window, id, run.workspaceId)))),
      );
      /** Writes (or continues) the files of one organisation, window by window. */
      const walk = async (organizationId: string) => {
        const own = organizationId === run.workspaceId;
        const partition = partitioned ? organizationId : undefined;
        const fileOwner = { exportId: run.destinationId, organizationId };
        const progress = windows.map((window) =>
          progressOf(unitKey(window, organizationId, run.workspaceId)),
        );
        // The span is read in one pass from its first window to write, cut into windows by recorded time: a
        // window already complete, or one begun earlier, starts a new pass at its own position.
        let lines: LineCursor | undefined;
        const pass = async (index: number) => {
          await lines?.close();
          const window = windows[index] as (typeof windows)[number];
          const from = progress[index]?.lastKey;
          const toMs = keyField === undefined ? item.toMs : window.toMs;
          // Rows recorded at or before the export's exact start, or outside the organisation's inclusion,
          // are not read (the first window keeps its name).
          const intervals = organizationIntervals(
            entries,
            organizationId,
            { fromMs: window.fromMs, toMs },
            item.startMs,
          );
          const read = (afterKey?: string) =>
            readIntervals(deps, organizationId, dataset, intervals, afterKey);
          lines = new LineCursor(
            keyField === undefined ? read(from) : latestPerKey(read, lineKeyOf(keyField), from),
            fileLineOf(dataset),
          );
          return lines;
        };
        try {
          for (const [index, window] of windows.entries()) {
            if (outOfTime()) throw new OutOfTime();
            const current = progress[index] as WindowProgress;
            if (current.done) {
              await lines?.close();
              lines = undefined;
              if (own) reach.finishedMs = window.toMs;
              continue;
            }
            const cursor =
              lines === undefined || current.lastKey !== undefined || keyField !== undefined
                ? await pass(index)
                : lines;
            cursor.until(window.toMs);
            const next = progress[index + 1];
            const following = windows[index + 1];
            await writeOne(
              current,
              (file) =>
                layout === 'run_hour'
                  ? runHourFileKey(prefix, dataset, window, file, fileFormat, fileOwner)
                  : eventFileKey(prefix, dataset, window, file, fileFormat, partition),
              cursor,
              {
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
              async () => {
                // Only a fresh next window, with rows, while there is time to start it.
                if (next === undefined || following === undefined || next.done || next.maxFile >= 0) return;
                if (outOfTime()) return;
                cursor.until(following.toMs);
                if (!(await cursor.hasMore())) return;
                next.maxFile = 0;
                return next;
              },
              // A window is finished (a backfill shows it) once the export's own files of it are.
              own ? window.toMs : undefined,
            );
            if (own) {
              result.doneThroughMs = window.toMs;
              reach.finishedMs = window.toMs;
            }
          }
        } finally {
          await (lines as LineCursor | undefined)?.close().catch(() => undefined);
        }
      };
      try {
        for (const organizationId of [...children, run.workspaceId]) await walk(organizationId);
      } finally {
        // Windows finished since the last save (empty ones save nothing): recorded once, on the way out.
        if (reach.finishedMs !== undefined && reach.finishedMs !== reach.recordedMs) {
          await book.reach(reach.finishedMs, deps.now()).catch(() => undefined);
        }
      }
    } else {
      const date = item.date;
      const progress = progressOf(date);
      if (progress.done) return result;
      const lines = new LineCursor(
        deps.eventSource.readSubscribers(run.workspaceId, progress.lastKey),
        (line) => withSnapshotDate(line, date),
      );
      try {
        await writeOne(progress, (index) => snapshotFileKey(prefix, date, index, fileFormat), lines, {
          kind: 'snapshot',
          key: snapshotSuccessKey(prefix, date),
          of: (files) => ({ dataset: 'subscribers', date, format: fileFormat.format, files }),
        });
      } finally {
        await lines.close().catch(() => undefined);
      }
    }
    return result;
  } catch (error) {
    if (error instanceof OutOfTime) return { ...result, status: 'partial' };
    if (error instanceof StopSignal) {
      if (error.reason === 'lease_lost' || error.reason === 'cancelled') return stopped(result, error.reason);
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
  item: Extract<WorkItem, { kind: 'events' }>,
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
