/**
 * The bucket secret never goes on the command line (where shell history and `ps` would keep it): it is read
 * whole from standard input (`--secret-access-key-stdin`), or typed at a prompt that does not echo it.
 */

/** Standard input as far as the secret is concerned. */
export interface SecretInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

/** Reads all of a stream and trims the line ending a `echo` or a file adds. */
export async function readSecretFromStream(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * Asks for the secret on a terminal without echoing it: raw mode, characters collected until Enter,
 * Backspace honoured, Ctrl-C or Ctrl-D abandons. Refuses when standard input is not a terminal, since then
 * nobody can type it (the error says to use `--secret-access-key-stdin`).
 */
export function promptSecret(
  question: string,
  input: SecretInput = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): Promise<string> {
  if (!input.isTTY || !input.setRawMode) {
    return Promise.reject(
      new Error(
        'The secret access key is needed: pipe it with --secret-access-key-stdin (standard input is not a terminal).',
      ),
    );
  }
  const setRawMode = input.setRawMode.bind(input);
  output.write(question);
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (error?: Error) => {
      input.removeListener('data', onData);
      setRawMode(false);
      input.pause();
      output.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer | string) => {
      for (const char of chunk.toString()) {
        if (char === '\r' || char === '\n') return finish();
        if (char === '\u0003' || char === '\u0004') return finish(new Error('Cancelled.'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    setRawMode(true);
    input.resume();
    input.on('data', onData);
  });
}
