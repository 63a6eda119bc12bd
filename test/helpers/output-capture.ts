import { inspect } from 'node:util';

/**
 * Captures everything written to stdout and stderr (console, Powertools loggers, anything else) while a
 * suite runs, so that a test can assert a secret never appeared in a log line. One patch per worker, shared
 * by every capture (so two captures at once both see everything); the writers are restored when the last
 * capture stops.
 */
export interface OutputCapture {
  /** Everything written since this capture started. */
  text(): string;
  /** Stops this capture. */
  stop(): void;
}

type Write = typeof process.stdout.write;
type ConsoleMethod = (...args: unknown[]) => void;

const CONSOLE_METHODS = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
const chunks: string[] = [];
let active = 0;
let passThrough = false;
let originals: Write[] = [];
let consoleOriginals: ConsoleMethod[] = [];

function install(): void {
  // vitest replaces the global console in workers (it never reaches process.stdout there): wrap it too.
  consoleOriginals = CONSOLE_METHODS.map((method) => console[method] as ConsoleMethod);
  CONSOLE_METHODS.forEach((method, index) => {
    const original = consoleOriginals[index]!;
    console[method] = (...args: unknown[]) => {
      chunks.push(`${args.map((arg) => (typeof arg === 'string' ? arg : inspect(arg))).join(' ')}\n`);
      if (passThrough) original.apply(console, args);
    };
  });
  const streams = [process.stdout, process.stderr];
  originals = streams.map((stream) => stream.write);
  streams.forEach((stream, index) => {
    const original = originals[index]!;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      if (!passThrough) {
        const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }
      return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as Write;
  });
}

function uninstall(): void {
  CONSOLE_METHODS.forEach((method, index) => {
    console[method] = consoleOriginals[index]!;
  });
  [process.stdout, process.stderr].forEach((stream, index) => {
    stream.write = originals[index]!;
  });
}

/** Starts a capture. `passThrough` also writes the output as usual (any capture asking for it turns it on). */
export function captureOutput(options: { passThrough?: boolean } = {}): OutputCapture {
  if (active === 0) install();
  active++;
  if (options.passThrough) passThrough = true;
  const start = chunks.length;
  let stopped = false;
  return {
    text: () => chunks.slice(start).join(''),
    stop: () => {
      if (stopped) return;
      stopped = true;
      active--;
      if (active === 0) {
        uninstall();
        passThrough = false;
      }
    },
  };
}

/** The Powertools JSON log lines of `service` in captured `text`, parsed. */
export function logLinesOf(text: string, service: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.includes(`"service":"${service}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
