/**
 * A bench part measured in a child Node process (a clean heap, its own environment, optionally pinned to one core):
 * the child prints its figures as one `BENCH_RESULT <json>` line, the parent runs it and reads that line.
 */
import { execFile } from 'node:child_process';

const RESULT_PREFIX = 'BENCH_RESULT ';

/** Prints `result` as the child's `BENCH_RESULT` line. */
export function printBenchResult(result: unknown): void {
  process.stdout.write(`\n${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

/**
 * Runs `command args` with `env` added to this process's environment and resolves with the figures of its
 * `BENCH_RESULT` line; rejects, naming `name` and the end of the child's stderr, if it fails or prints none.
 */
export function runBenchChild<T>(
  name: string,
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  maxBuffer = 64 * 1024 * 1024,
): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: { ...process.env, ...env }, maxBuffer }, (error, stdout, stderr) => {
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
      if (error || line === undefined) {
        reject(new Error(`${name} failed: ${error?.message ?? 'no result'}\n${stderr.slice(-2000)}`));
        return;
      }
      resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as T);
    });
  });
}
