import type { SecretInput } from './secret.js';

/** What a command reads and writes, injectable so that tests run the CLI in process. */
export interface CliContext {
  /** A line on standard output. */
  out(line: string): void;
  /** A line on standard error. */
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  stdin: SecretInput;
  /** Where prompts are written. @default process.stderr */
  promptOutput?: NodeJS.WritableStream;
  /** @default the global fetch */
  fetch?: typeof fetch;
  /** @default `.sluice/local.json` of this repository */
  localJsonFile?: string;
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

/** Thrown for a failure already printed: the CLI exits with `exitCode` and prints nothing more. */
export class ExitError extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = 'ExitError';
  }
}

/** A bad invocation (a missing option, a value the CLI cannot read): printed with a hint, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
