/**
 * What `npm start` shows. The person at the terminal sees short lines (one per export run, one per API call);
 * what the functions write themselves (Powertools JSON logs, EMF metric lines, anything else on stdout or
 * stderr) goes to a file under `.sluice/logs/`, unless `--verbose` leaves it on the terminal.
 */
import { createWriteStream, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiCall } from './http-adapter.js';

/** A stream as far as routing is concerned: `process.stdout` or `process.stderr`. */
export interface OutputStream {
  write: NodeJS.WriteStream['write'];
}

/** Options of {@link routeLocalOutput}. */
export interface LocalOutputOptions {
  /** Leave everything on the terminal, as the functions write it. */
  verbose: boolean;
  /** The folder of the log files. */
  logDir: string;
  /** @default process.stdout and process.stderr */
  streams?: { stdout: OutputStream; stderr: OutputStream };
  /** Names the log file. @default now */
  now?: Date;
  /**
   * Log files kept in `logDir`, the new one included; older ones are removed.
   * @default 10
   */
  keep?: number;
}

/** The routing in place. */
export interface LocalOutput {
  /** Writes a line to the terminal's stdout (never to the log file). */
  print(line: string): void;
  /** Writes a line to the terminal's stderr (never to the log file). */
  printError(line: string): void;
  /** Where everything else written to stdout and stderr goes; undefined when verbose (the terminal). */
  logFile: string | undefined;
  /** Puts the streams' own `write` back and closes the file. Safe to call twice. */
  close(): Promise<void>;
}

const LOG_FILE = /^sluice-.+\.log$/;

/**
 * Routes what the process writes to stdout and stderr into a new log file (`sluice-<time>.log` in `logDir`),
 * keeping {@link LocalOutput.print} and {@link LocalOutput.printError} for the terminal. With `verbose`
 * nothing is routed and both print as usual.
 */
export function routeLocalOutput(options: LocalOutputOptions): LocalOutput {
  const { stdout, stderr } = options.streams ?? { stdout: process.stdout, stderr: process.stderr };
  const toStdout = stdout.write.bind(stdout) as (text: string) => boolean;
  const toStderr = stderr.write.bind(stderr) as (text: string) => boolean;
  const print = (line: string) => void toStdout(`${line}\n`);
  const printError = (line: string) => void toStderr(`${line}\n`);
  if (options.verbose) return { print, printError, logFile: undefined, close: async () => {} };

  mkdirSync(options.logDir, { recursive: true });
  const stamp = (options.now ?? new Date()).toISOString().replace(/[:.]/g, '-');
  const logFile = join(options.logDir, `sluice-${stamp}.log`);
  removeOldLogs(options.logDir, (options.keep ?? 10) - 1);
  const file = createWriteStream(logFile, { flags: 'a' });

  const originals = [stdout.write, stderr.write] as const;
  const intoFile = ((chunk: string | Uint8Array, ...rest: unknown[]) =>
    (file.write as (...args: unknown[]) => boolean)(chunk, ...rest)) as NodeJS.WriteStream['write'];
  stdout.write = intoFile;
  stderr.write = intoFile;

  let closing: Promise<void> | undefined;
  return {
    print,
    printError,
    logFile,
    close() {
      closing ??= new Promise<void>((resolve) => {
        [stdout.write, stderr.write] = originals;
        file.end(resolve);
      });
      return closing;
    },
  };
}

/** Removes all but the `keep` newest log files (their names sort by time). */
function removeOldLogs(logDir: string, keep: number): void {
  const files = readdirSync(logDir)
    .filter((name) => LOG_FILE.test(name))
    .sort();
  for (const name of files.slice(0, Math.max(0, files.length - keep))) {
    rmSync(join(logDir, name), { force: true });
  }
}

/** `POST /v1/data-exports 201 84 ms` */
export function formatRequestLine(request: ApiCall): string {
  return `${request.method} ${request.path} ${request.status} ${Math.round(request.ms)} ms`;
}
