/**
 * Builds the console: esbuild bundles `src/app/main.ts` (and its CSS) into `outDir`, beside a copy of
 * `index.html` and a `config.json` naming the API (`/v1` on the same origin; the CDK deployment writes its own).
 * `npm run build:console` runs it; `npm start`, the console test and `cdk synth` (the CDK asset's local
 * bundling, which is synchronous: hence `buildSync`) build on the fly, in well under a second.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

/** The directory `npm run build:console` writes (ignored by git). */
export const CONSOLE_DIST_DIR = fileURLToPath(new URL('../dist/', import.meta.url));

const APP_DIR = fileURLToPath(new URL('./app/', import.meta.url));

/** What {@link buildConsole} wrote. */
export interface ConsoleBuild {
  outDir: string;
  files: string[];
}

/** The config the console reads at start: where the API is. */
export interface ConsoleConfig {
  /** Base URL of the API, ending in `/v1`; relative to the console's origin when it starts with `/`. */
  apiUrl: string;
}

/** The directory of the console's sources (the CDK asset hashes it). */
export const CONSOLE_SOURCE_DIR = APP_DIR;

/** Bundles the console into `outDir` (minified, with a source map), with `config` as its `config.json`. */
export function buildConsole(
  outDir: string = CONSOLE_DIST_DIR,
  config: ConsoleConfig = { apiUrl: '/v1' },
): ConsoleBuild {
  mkdirSync(outDir, { recursive: true });
  buildSync({
    entryPoints: { console: join(APP_DIR, 'main.ts') },
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    platform: 'browser',
    minify: true,
    sourcemap: 'linked',
    outdir: outDir,
    logLevel: 'silent',
    legalComments: 'none',
  });
  copyFileSync(join(APP_DIR, 'index.html'), join(outDir, 'index.html'));
  writeFileSync(join(outDir, 'config.json'), `${JSON.stringify(config)}\n`);
  return { outDir, files: ['index.html', 'console.js', 'console.css', 'config.json'] };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    console.log(`Console built in ${buildConsole().outDir}`);
  } catch (error) {
    console.error(`build:console failed: ${(error as Error).message}`);
    process.exit(1);
  }
}
