import { Readable } from 'node:stream';
import { type CliContext, runSluice } from '@sluice/cli';

/** What one `sluice` invocation printed, and its exit code. */
export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs `sluice <argv>` in process against `apiUrl` with `apiKey` (given as options unless `env` says
 * otherwise), `stdin` as its standard input (not a terminal), and returns what it printed.
 */
export async function sluice(
  argv: readonly string[],
  options: { stdin?: string; env?: NodeJS.ProcessEnv; sleep?: CliContext['sleep'] } = {},
): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const context: CliContext = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: options.env ?? {},
    stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    localJsonFile: '/nonexistent/.sluice/local.json',
    ...(options.sleep ? { sleep: options.sleep } : {}),
  };
  const code = await runSluice(argv, context, async () => {
    throw new Error('no operator commands in these tests');
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}
