import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DYNAMODB_LOCAL_CACHE, ensureDynamoDbLocal } from './jar.js';

/** Options of {@link startDynamoDbLocal}. */
export interface DynamoDbLocalOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default 0
   */
  port?: number;
  /** Folder for the database file; when absent the database lives in memory and dies with the process. */
  dbPath?: string;
  /**
   * With a `dbPath`: let SQLite sync every committed write to the disk (DynamoDB Local's own behaviour), or
   * not. `false` runs {@link NO_SYNC_SQLITE_PRAGMAS}: writes reach the file through the operating system's cache
   * without waiting for the disk, at close to the in-memory server's speed (the per-write sync made it 10 to 30
   * times slower). A crash or SIGKILL of the server loses nothing it acknowledged (the rollback journal undoes a
   * half-written transaction at the next start); a crash of the operating system or a power cut can lose
   * recent writes and may corrupt the file.
   * @default true
   */
  syncWrites?: boolean;
  /**
   * Start the JVM for a short life: C1 only, serial GC (half the start-up, slower at full load).
   * `SLUICE_DYNAMODB_JAVA_OPTS`, when set, replaces these flags either way.
   * @default true for an in-memory server, false with a dbPath
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
 * The SQLite settings of a database that does not sync each write: keep the rollback journal file between
 * transactions instead of creating and deleting it each time (`PERSIST`), and never wait for the disk
 * (`synchronous=OFF`). Chosen by `npm run bench` figures (README, "Local ingest"): in-memory 1.00, these
 * 0.87, journal in memory 0.76-0.93 (but a killed server can leave a corrupt file), WAL 0.49-0.73, the
 * default file under `eatmydata` 0.51, the default file 0.03.
 */
export const NO_SYNC_SQLITE_PRAGMAS = 'PRAGMA journal_mode=PERSIST; PRAGMA synchronous=OFF';

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
  const args = [
    `-Dsluice.port=${options.port ?? 0}`,
    '-Dsluice.host=127.0.0.1',
    `-Djava.library.path=${paths.libDir}`,
    ...(options.dbPath && options.syncWrites === false
      ? [`-Dsluice.sqlitePragmas=${NO_SYNC_SQLITE_PRAGMAS}`]
      : []),
    '-Xss1m',
    ...javaOptions(options.quickStart ?? !options.dbPath),
    '-cp',
    `${paths.jar}:${paths.launcherDir}`,
    paths.launcherClass,
    '-port',
    '8000', // placeholder: the jar rejects 0; the launcher applies -Dsluice.port
    '-sharedDb',
    '-disableTelemetry',
  ];
  if (options.dbPath) {
    const dbPath = resolve(options.dbPath);
    await mkdir(dbPath, { recursive: true });
    args.push('-dbPath', dbPath);
  } else {
    args.push('-inMemory');
  }

  const child = spawn('java', args, { cwd: DYNAMODB_LOCAL_CACHE, stdio: ['pipe', 'pipe', 'pipe'] });
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  exited.then(() => process.off('exit', killOnExit));

  let port: number;
  try {
    port = await waitForReady(child, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
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
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
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
      child.off('exit', onExit);
      child.off('error', onError);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
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
