import {
  causeMessage,
  type DispatchOutcome,
  type ExportRunOutcome,
  LocalWorkflows,
} from './stepfunctions.js';

/** Options of {@link startScheduler}. */
export interface SchedulerOptions {
  /**
   * Time between two Dispatch ticks (the EventBridge rule runs it every minute).
   * @default SLUICE_TICK_SECONDS × 1000 when set, else 60,000
   */
  intervalMs?: number;
  /**
   * Delay before the first tick.
   * @default 1,000
   */
  firstTickMs?: number;
  /** The runner, or how to make it on the first tick (`npm start` synthesizes the definitions then). */
  workflows: LocalWorkflows | (() => Promise<LocalWorkflows>);
  /** One line per export run (see {@link formatRunLine}) and per scheduler event. @default console.log */
  log?: (line: string) => void;
  /**
   * The event archive's compaction, run every `intervalMs` (its first run with the first tick).
   * @default none
   */
  archive?: { run: () => Promise<unknown>; intervalMs: number };
}

/** A running local schedule. */
export interface Scheduler {
  /** Runs one Dispatch tick now, or joins the one in progress; never rejects (errors are logged). */
  tick(): Promise<DispatchOutcome | undefined>;
  /** Stops the timer and waits for the tick in progress. */
  stop(): Promise<void>;
}

/** Ticks run back to back at most this many times while destinations are still catching up. */
const MAX_CATCH_UP_TICKS = 50;

/**
 * The local stand-in for the every-minute EventBridge rule: runs the Dispatch definition (and the ExportRuns
 * it starts) on an interval, one tick at a time, so `npm start` exports to the local bucket on its own.
 * A tick whose runs report `runAgain` (a destination still catching up) is followed at once by another.
 * Set `SLUICE_TICK_SECONDS` to tick faster for a demo.
 */
export function startScheduler(options: SchedulerOptions): Scheduler {
  const log = options.log ?? ((line: string) => console.log(line));
  const intervalMs = options.intervalMs ?? tickSecondsFromEnv() * 1000;
  const { workflows } = options;
  let runner: LocalWorkflows | undefined;
  let running: Promise<DispatchOutcome | undefined> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let catchUp = 0;

  const runOnce = async (): Promise<DispatchOutcome | undefined> => {
    try {
      // Loaded on the first tick (a synth may take seconds); a failed load is tried again next tick.
      runner ??= workflows instanceof LocalWorkflows ? workflows : await workflows();
      const outcome = await runner.runDispatch();
      report(outcome, log);
      return outcome;
    } catch (error) {
      log(
        `[scheduler] dispatch failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
      );
      return undefined;
    }
  };

  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      void tick().then((outcome) => {
        const behind = outcome?.runs.some((run) => run.runAgain) ?? false;
        catchUp = behind ? catchUp + 1 : 0;
        schedule(behind && catchUp < MAX_CATCH_UP_TICKS ? 0 : intervalMs);
      });
    }, delay);
    timer.unref?.();
  };

  const tick = (): Promise<DispatchOutcome | undefined> => {
    running ??= runOnce().finally(() => {
      running = undefined;
    });
    return running;
  };

  log(`[scheduler] Dispatch every ${intervalMs / 1000} s`);
  schedule(options.firstTickMs ?? 1_000);
  // The archive compaction, like its EventBridge schedule: one at a time, a failure logged and retried later.
  let archiving: Promise<unknown> | undefined;
  let archiveTimer: NodeJS.Timeout | undefined;
  const archive = options.archive;
  if (archive !== undefined) {
    const compact = () => {
      archiving ??= archive
        .run()
        .catch((error: unknown) => log(`[scheduler] archive compaction failed: ${(error as Error).message}`))
        .finally(() => {
          archiving = undefined;
        });
    };
    archiveTimer = setInterval(compact, archive.intervalMs);
    archiveTimer.unref?.();
    setTimeout(compact, options.firstTickMs ?? 1_000).unref?.();
  }
  return {
    tick,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (archiveTimer) clearInterval(archiveTimer);
      await running;
      await archiving;
    },
  };
}

export function tickSecondsFromEnv(): number {
  const raw = process.env.SLUICE_TICK_SECONDS;
  if (raw === undefined || raw === '') return 60;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`SLUICE_TICK_SECONDS must be a positive number of seconds, got "${raw}"`);
  }
  return seconds;
}

function report(outcome: DispatchOutcome, log: (line: string) => void): void {
  for (const run of outcome.runs) log(formatRunLine(run));
}

/**
 * One line for an export run: `[export] <workspace>/<destination> <datasets>: <rows> rows, <files> files,
 * <bytes> in <duration>`, or why it stopped, was skipped or failed (the message RecordFailure recorded).
 */
export function formatRunLine(run: ExportRunOutcome): string {
  const where = run.input as { workspaceId?: unknown; destinationId?: unknown } | null;
  const destination = `${String(where?.workspaceId)}/${String(where?.destinationId)}`;
  const took = formatDuration(run.durationMs);
  const wrote = `${count(run.rows, 'row')}, ${count(run.files, 'file')}, ${formatBytes(run.bytes)}`;
  switch (run.status) {
    case 'succeeded':
      if (run.items === 0) return `[export] ${destination} nothing to write yet (${took})`;
      return `[export] ${destination} ${run.datasets.join(', ')}: ${wrote} in ${took}${run.runAgain ? ' (still behind: runs again now)' : ''}`;
    case 'stopped':
      return `[export] ${destination} stopped (paused, deleted or changed) after ${wrote} in ${took}`;
    case 'skipped':
      return `[export] ${destination} skipped${run.reason ? `: ${run.reason}` : ''}`;
    case 'failed':
      return `[export] ${destination} failed in ${took}: ${run.error ? `${run.error.Error}: ${causeMessage(run.error)}` : 'unknown error'}`;
  }
}

function count(value: number, noun: string): string {
  return `${value.toLocaleString('en-US')} ${noun}${value === 1 ? '' : 's'}`;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 59_950) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}
