/**
 * `sluice …` (the package's bin, and `npm run sluice -- …`). Run `sluice --help` for the commands.
 */

// The SDK's notice that it will require Node 22 is noise on a command line: set before any module loads it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { runSluice } = await import('./program.js');

process.exitCode = await runSluice(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  stdin: process.stdin,
});
