import {
  type BucketLocation,
  type Destination,
  eventFileKey,
  MAX_LINES_PER_FILE,
  snapshotFileKey,
  snapshotSuccessKey,
  withSnapshotDate,
} from '@sluice/core';
import { type ClosableBucketWriter, type EngineDeps, resolveDeps } from './deps.js';
import { classifyEngineError } from './errors.js';
import type { RunRef, StopReason, WindowResult, WorkItem, WriteWindowInput } from './payloads.js';

/** Pulls lines one at a time out of pages, so files can be cut at any line count. */
class LineCursor {
  private page: string[] = [];
  private index = 0;
  private done = false;
  private readonly pages: AsyncIterator<string[]>;

  constructor(
    pages: AsyncIterable<string[]>,
    private readonly map: (line: string) => string = (line) => line,
  ) {
    this.pages = pages[Symbol.asyncIterator]();
  }

  /** True when another line follows; fetches the next non-empty page if needed. */
  async hasMore(): Promise<boolean> {
    while (this.index >= this.page.length) {
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

  /** The next at most `limit` lines, as batches of the pages' lines (the encoder batches them again). */
  async *take(limit: number): AsyncGenerator<string> {
    let taken = 0;
    while (taken < limit && (await this.hasMore())) {
      const end = Math.min(this.page.length, this.index + (limit - taken));
      for (let i = this.index; i < end; i++) yield this.map(this.page[i] as string);
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

/**
 * WriteWindow: one Map iteration, in the writer Lambda.
 * 1. Read the destination: deleted, paused or a changed `configVersion` → `stopped` (not a failure).
 * 2. Open the secret (only the writer decrypts it) and build the bucket writer for the location.
 * 3. Events: stream the window's lines from the event source into files of at most 50,000 lines,
 *    `<dataset>-<fromMs>-<toMs>-NNNN.jsonl.gz`; an empty window writes no file.
 *    Snapshot: stream the subscribers, `snapshot_date` spliced into each stored line, into
 *    `subscribers-NNNN.jsonl.gz`, then `_SUCCESS` last.
 * 4. Before every file after the first (and before `_SUCCESS`) read the destination again and stop as in 1.
 * Memory is bounded by an upload part and a few pages, not by the window. Errors are thrown with a
 * classified name (see errors.ts); a failed upload leaves no object behind.
 */
export async function writeWindow(
  input: WriteWindowInput,
  injected: Partial<EngineDeps> = {},
): Promise<WindowResult> {
  const deps = resolveDeps(injected);
  const { run, item } = input;
  const result: WindowResult = baseResult(item);
  let writer: ClosableBucketWriter | undefined;
  let cursor: LineCursor | undefined;
  try {
    const destination = await deps.controlStore.getDestination(run.workspaceId, run.destinationId);
    const reason = stopReasonOf(destination, run);
    if (reason !== undefined || destination === undefined) return stopped(result, reason ?? 'deleted');

    const secretAccessKey = await deps.sealer.open(destination.secret, {
      workspaceId: run.workspaceId,
      destinationId: run.destinationId,
    });
    writer = deps.bucketWriterFactory(locationOf(destination), {
      accessKeyId: destination.accessKeyId,
      secretAccessKey,
    });
    const prefix = destination.pathPrefix;
    const keyOf =
      item.kind === 'events'
        ? (index: number) => eventFileKey(prefix, item.dataset, item, index)
        : (index: number) => snapshotFileKey(prefix, item.date, index);
    cursor =
      item.kind === 'events'
        ? new LineCursor(deps.eventSource.readWindow(run.workspaceId, item.dataset, item.fromMs, item.toMs))
        : new LineCursor(deps.eventSource.readSubscribers(run.workspaceId), (line) =>
            withSnapshotDate(line, item.date),
          );

    for (let index = 0; await cursor.hasMore(); index++) {
      if (index > 0) {
        const again = stopReasonOf(
          await deps.controlStore.getDestination(run.workspaceId, run.destinationId),
          run,
        );
        if (again !== undefined) return stopped(result, again);
      }
      const file = await writer.writeFile(keyOf(index), cursor.take(MAX_LINES_PER_FILE));
      if (!file.written) break;
      result.files += 1;
      result.rows += file.lines;
      result.bytes += file.bytes;
    }
    if (item.kind === 'snapshot') {
      const again = stopReasonOf(
        await deps.controlStore.getDestination(run.workspaceId, run.destinationId),
        run,
      );
      if (again !== undefined) return stopped(result, again);
      await writer.writeMarker(snapshotSuccessKey(prefix, item.date), '');
    }
    return result;
  } catch (error) {
    throw classifyEngineError(error);
  } finally {
    await cursor?.close().catch(() => undefined);
    writer?.close?.();
  }
}

function baseResult(item: WorkItem): WindowResult {
  return item.kind === 'events'
    ? {
        dataset: item.dataset,
        kind: 'events',
        fromMs: item.fromMs,
        toMs: item.toMs,
        status: 'written',
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
