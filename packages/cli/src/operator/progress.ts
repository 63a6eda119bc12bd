/**
 * Progress of a long CLI command, on stderr so that stdout carries only the result (`--json` stays pure).
 * On a terminal: one bar redrawn in place with the rate and the time left. Otherwise (a pipe, a CI log): a
 * plain line every few seconds and a last one at the end, no control characters.
 */

/** Where progress is written: `process.stderr`, or a fake in tests. */
export interface ProgressStream {
  /** A terminal: redraw one line in place. */
  isTTY?: boolean;
  /** Width of the terminal. */
  columns?: number;
  write(text: string): unknown;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** What is counted, plural: `events`, `lines`. */
  unit: string;
  /** Rows expected, when known (a bar needs a total or {@link Progress.update}'s `fraction`). */
  total?: number;
  /** @default process.stderr */
  stream?: ProgressStream;
  /** The clock, epoch ms. @default Date.now */
  now?: () => number;
  /** Least time between two redraws on a terminal. @default 100 */
  redrawMs?: number;
  /** Least time between two plain lines. @default 5000 */
  lineMs?: number;
}

/** A progress display. */
export interface Progress {
  /**
   * Sets the rows done so far; `fraction` (0 to 1) is the share of the work done when rows alone cannot say
   * (a file read by bytes). Draws when the last drawing is old enough.
   */
  update(rows: number, fraction?: number): void;
  /** Draws the final state (and ends the bar's line). */
  finish(): void;
}

const BAR_WIDTH = 24;

/** `1234567` → `1,234,567`. */
function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Seconds as `42s`, `3m 05s` or `1h 02m`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** Starts a progress display; the clock starts now. */
export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? Date.now;
  const tty = stream.isTTY === true;
  const every = tty ? (options.redrawMs ?? 100) : (options.lineMs ?? 5_000);
  const started = now();
  let lastDrawn = started;
  let rows = 0;
  let fraction: number | undefined;
  let finished = false;

  const share = (): number | undefined => {
    if (fraction !== undefined) return Math.min(1, Math.max(0, fraction));
    return options.total ? Math.min(1, rows / options.total) : undefined;
  };

  const render = (final: boolean): string => {
    const seconds = Math.max(0.001, (now() - started) / 1000);
    const rate = rows / seconds;
    const done = share();
    const of = options.total !== undefined ? ` of ${count(options.total)}` : '';
    const percent = done !== undefined ? ` (${Math.floor(done * 100)}%)` : '';
    const left =
      !final && done !== undefined && done > 0 ? `, ${duration((seconds * (1 - done)) / done)} left` : '';
    const elapsed = final ? ` in ${duration(seconds)}` : '';
    const text = `${count(rows)}${of} ${options.unit}${percent}, ${count(rate)} rows/s${left}${elapsed}`;
    if (!tty) return text;
    const filled = Math.round((done ?? 0) * BAR_WIDTH);
    const bar = done !== undefined ? `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ` : '';
    // Never wrap (a wrapped line cannot be redrawn in place); a terminal of unknown width counts as 80.
    const width = stream.columns && stream.columns > 20 ? stream.columns : 80;
    return `${bar}${text}`.slice(0, width - 1);
  };

  const draw = (final: boolean) => {
    lastDrawn = now();
    // On a terminal: back to the line's start, clear it, redraw.
    if (tty) stream.write(`\r\x1b[2K${render(final)}${final ? '\n' : ''}`);
    else stream.write(`${render(final)}\n`);
  };

  return {
    update(doneRows, doneFraction) {
      rows = doneRows;
      fraction = doneFraction;
      if (!finished && now() - lastDrawn >= every) draw(false);
    },
    finish() {
      if (finished) return;
      finished = true;
      draw(true);
    },
  };
}
