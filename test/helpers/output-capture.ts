/**
 * Captures everything written to stdout and stderr (console, Powertools loggers, anything else) while a
 * suite runs, still passing it through, so that a test can assert a secret never appeared in a log line.
 */
export interface OutputCapture {
  /** Everything written since {@link captureOutput}. */
  text(): string;
  /** Restores the original writers. */
  stop(): void;
}

type Write = typeof process.stdout.write;

export function captureOutput(options: { passThrough?: boolean } = {}): OutputCapture {
  const chunks: string[] = [];
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((stream) => stream.write);
  streams.forEach((stream, index) => {
    const original = originals[index]!;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      if (options.passThrough === false) {
        const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }
      return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as Write;
  });
  return {
    text: () => chunks.join(''),
    stop: () => {
      streams.forEach((stream, index) => {
        stream.write = originals[index]!;
      });
    },
  };
}
