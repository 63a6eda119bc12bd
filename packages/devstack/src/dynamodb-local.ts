import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { dirname, resolve } from 'node:path';
import { DYNAMODB_LOCAL_CACHE, ensureDynamoDbLocal } from './jar.js';

/** Options of {@link startDynamoDbLocal}. */
export interface DynamoDbLocalOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default 0
   */
  port?: number;
  /**
   * Keep the in-memory database in this file (an SQLite file in DynamoDB Local's own format): restored from it
   * before the server reports ready, written to it every `snapshotIntervalMs` when something changed and when
   * the server stops. Each snapshot goes to `<file>.tmp`, is synced, and replaces the file in one rename. Without
   * it the database dies with the process. See docs/local.md, "Local storage", for what a crash can lose.
   */
  snapshotFile?: string;
  /**
   * How often to write the snapshot when something changed; at least ten times the last snapshot's length
   * (a snapshot holds the database while it copies: about 4 s for 1,000,000 events, so every 40 s then).
   * @default 30000
   */
  snapshotIntervalMs?: number;
  /** Receives a line when the database is restored and when a snapshot is written or fails. */
  log?: (line: string) => void;
  /**
   * Start the JVM for a short life: C1 only, serial GC (half the start-up, slower at full load).
   * `SLUICE_DYNAMODB_JAVA_OPTS`, when set, replaces these flags either way.
   * @default true without a snapshotFile, false with one
   */
  quickStart?: boolean;
  /**
   * How long to wait for the server to answer.
   * @default 60000
   */
  startTimeoutMs?: number;
}

/** A running DynamoDB Local. */
export interface DynamoDbLocal {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  port: number;
  /** The Java process id. */
  pid: number | undefined;
  /** Stops the server and waits for the process to exit. Safe to call twice. */
  stop(): Promise<void>;
}

const READY = /SLUICE_DYNAMODB_READY (\d+)/;

/**
 * JVM flags for short-lived in-memory servers (the tests): C1 only and the serial collector, which halved the
 * start-up (server plus first tables: 5.3 s instead of 10-11 s on the loaded 2-core CI box).
 */
const QUICK_START_JAVA_OPTIONS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];

/**
 * The JVM flags: `SLUICE_DYNAMODB_JAVA_OPTS` (space-separated) when set, read when a server starts; else the
 * quick-start flags when asked for, else the JVM defaults (full JIT).
 */
function javaOptions(quickStart: boolean): string[] {
  const fromEnv = process.env.SLUICE_DYNAMODB_JAVA_OPTS;
  if (fromEnv !== undefined) return fromEnv.split(/\s+/).filter(Boolean);
  return quickStart ? QUICK_START_JAVA_OPTIONS : [];
}

/**
 * Starts DynamoDB Local bound to 127.0.0.1 only, with `-sharedDb` (one database whatever the client's
 * credentials and region), and resolves once it answers HTTP.
 *
 * The Java process is tied to this one three ways: `stop()`, a `process.on('exit')` hook that kills it, and the
 * launcher's own watchdog that exits when its standard input (a pipe from this process) closes, which also
 * covers this process dying from SIGKILL.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const paths = await ensureDynamoDbLocal();
  const snapshotFile = options.snapshotFile ? resolve(options.snapshotFile) : undefined;
  const args = [
    `-Dsluice.port=${options.port ?? 0}`,
    '-Dsluice.host=127.0.0.1',
    `-Djava.library.path=${paths.libDir}`,
    ...(snapshotFile
      ? [
          `-Dsluice.snapshotFile=${snapshotFile}`,
          `-Dsluice.snapshotIntervalMs=${options.snapshotIntervalMs ?? 30_000}`,
        ]
      : []),
    '-Xss1m',
    ...javaOptions(options.quickStart ?? !snapshotFile),
    '-cp',
    `${paths.jar}:${paths.launcherDir}`,
    paths.launcherClass,
    '-port',
    '8000', // placeholder: the jar rejects 0; the launcher applies -Dsluice.port
    '-sharedDb',
    '-disableTelemetry',
    '-inMemory',
  ];
  if (snapshotFile) await mkdir(dirname(snapshotFile), { recursive: true });

  const child = spawn('java', args, { cwd: DYNAMODB_LOCAL_CACHE, stdio: ['pipe', 'pipe', 'pipe'] });
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  exited.then(() => process.off('exit', killOnExit));
  let restoreFailure: string | undefined;
  if (snapshotFile && child.stdout) {
    const log = options.log ?? (() => {});
    createInterface({ input: child.stdout }).on('line', (line) => {
      const notice = snapshotNotice(line, snapshotFile);
      if (notice?.restoreFailure !== undefined) restoreFailure = notice.restoreFailure;
      if (notice) log(notice.line);
    });
  }

  let port: number;
  try {
    port = await waitForReady(child, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    if (restoreFailure !== undefined)
      throw new Error(
        `DynamoDB Local cannot restore its tables from ${snapshotFile}: ${restoreFailure}. ` +
          'Move the file away, or start empty (npm start -- --fresh).',
      );
    throw error;
  }
  // Keep draining the pipes so a chatty server never blocks on a full buffer.
  child.stdout?.resume();
  child.stderr?.resume();

  const endpoint = `http://127.0.0.1:${port}`;
  await waitForHttp(endpoint, options.startTimeoutMs ?? 60_000);

  let stopping: Promise<void> | undefined;
  return {
    endpoint,
    port,
    pid: child.pid,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.stdin?.end();
          child.kill('SIGTERM');
          // The last snapshot is written on the way out: give it time (a million events take seconds).
          const timer = setTimeout(() => child.kill('SIGKILL'), snapshotFile ? 300_000 : 5_000);
          await exited;
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
}

/** What a line of the launcher says about the snapshot, in words; undefined for any other line. */
export function snapshotNotice(
  line: string,
  file: string,
): { line: string; restoreFailure?: string } | undefined {
  // sqlite4java prefixes SQLite's message with its codes: "[26] DB[1] exec() file is not a database".
  const reason = (text: string) => text.replace(/^\[\d+\] DB\[\d+\] [\w.]+\(\) /, '');
  const mb = (bytes: string) => `${(Number(bytes) / 1_048_576).toFixed(1)} MB`;
  const restored = /^SLUICE_DYNAMODB_RESTORED (\d+) (\d+) (\d+)$/.exec(line);
  if (restored)
    return { line: `DynamoDB: tables restored from ${file} (${mb(restored[2]!)}) in ${restored[3]} ms` };
  const saved = /^SLUICE_DYNAMODB_SNAPSHOT (\d+) (\d+)$/.exec(line);
  if (saved) return { line: `DynamoDB: snapshot written to ${file} (${mb(saved[1]!)}) in ${saved[2]} ms` };
  const failed = /^SLUICE_DYNAMODB_SNAPSHOT_FAILED (.*)$/.exec(line);
  if (failed)
    return {
      line: `DynamoDB: the snapshot to ${file} failed (the previous one stays): ${reason(failed[1]!)}`,
    };
  const restoreFailed = /^SLUICE_DYNAMODB_RESTORE_FAILED (.*)$/.exec(line);
  if (restoreFailed) {
    const restoreFailure = reason(restoreFailed[1]!);
    return { line: `DynamoDB: cannot restore from ${file}: ${restoreFailure}`, restoreFailure };
  }
  return undefined;
}

function waitForReady(child: ChildProcess, timeoutMs: number): Promise<number> {
  return new Promise((resolvePort, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = READY.exec(output);
      if (match?.[1]) {
        cleanup();
        resolvePort(Number(match[1]));
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`DynamoDB Local exited (code ${code}) before it was ready:\n${output.slice(-2000)}`));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new Error(`Cannot run java for DynamoDB Local (Java 17+ must be on PATH): ${error.message}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`DynamoDB Local was not ready after ${timeoutMs} ms:\n${output.slice(-2000)}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('close', onExit);
      child.off('error', onError);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    // 'close', not 'exit': every line the process printed has been read by then.
    child.once('close', onExit);
    child.once('error', onError);
  });
}

/** Polls until the endpoint answers any HTTP response (DynamoDB Local answers a bare GET with 400). */
async function waitForHttp(endpoint: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(endpoint, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`DynamoDB Local at ${endpoint} does not answer`, { cause: error });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
