/**
 * `npm run sim -- --seeds N [--ops M] [--from S] [--minutes T] [--only check,check] [--shrink-seconds T]
 * [--tolerate-known] [--recipe name]`: runs N generated schedules (seeds S, S+1, ...; none started after T minutes) on local services it starts, as the tests do. A failure prints
 * `SLUICE_SIM_SEED=<n>` (and `SLUICE_SIM_PATH=<p>` for the shrunk schedule) with the shrunk schedule;
 * `SLUICE_SIM_SEED=<n> npm run sim` replays it.
 */
import { parseArgs } from 'node:util';
import { startLocalServices } from '@sluice/devstack';
import { toleratedChecks } from './known-defects.js';
import { CHECKS, type Check } from './oracle.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '1' },
    ops: { type: 'string', default: '40' },
    from: { type: 'string' },
    only: { type: 'string' },
    /** Each schedule opens with this recipe (`recipeSchedule`), its parameters from the seed. */
    recipe: { type: 'string' },
    'shrink-seconds': { type: 'string', default: '600' },
    'tolerate-known': { type: 'boolean', default: false },
    /** Fail on nothing: print every check each seed trips, with its first message. */
    survey: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    /** Stop starting seeds after this many minutes (a long run: `--seeds 2000 --minutes 40`). */
    minutes: { type: 'string' },
  },
});

function checksOf(text: string | undefined): ReadonlySet<Check> | undefined {
  if (text === undefined) return undefined;
  const names = text.split(',').filter((name) => name !== '');
  for (const name of names)
    if (!(CHECKS as readonly string[]).includes(name)) throw new Error(`unknown check ${name}`);
  return new Set(names as Check[]);
}

async function main(): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const services = await startLocalServices();
  for (const [name, value] of Object.entries(services.env)) process.env[name] = value;
  delete process.env.AWS_PROFILE;
  // Loaded after the environment is set.
  const { runSeed } = await import('./sim.js');
  const replay = process.env.SLUICE_SIM_SEED;
  const first = Number(replay ?? values.from ?? Math.floor(Math.random() * 2 ** 31));
  const count = replay === undefined ? Number(values.seeds) : 1;
  const ops = Number(values.ops);
  const only = checksOf(values.only);
  const tolerated = values.survey
    ? new Set<Check>(CHECKS)
    : values['tolerate-known']
      ? toleratedChecks()
      : undefined;
  const started = performance.now();
  let failures = 0;
  let totalOps = 0;
  let ran = 0;
  const stopAtMs =
    values.minutes === undefined ? Number.POSITIVE_INFINITY : started + Number(values.minutes) * 60_000;
  const faults = new Map<string, number>();
  try {
    for (let seed = first; seed < first + count && performance.now() < stopAtMs; seed++) {
      ran += 1;
      const result = await runSeed(seed, ops, {
        ...(only ? { only } : {}),
        ...(values.recipe ? { recipe: values.recipe } : {}),
        ...(tolerated ? { tolerated } : {}),
        ...(process.env.SLUICE_SIM_PATH ? { path: process.env.SLUICE_SIM_PATH } : {}),
        shrinkMs: Number(values['shrink-seconds']) * 1000,
        ...(values.verbose ? { log: (line: string) => console.log(`  ${line}`) } : {}),
      });
      totalOps += result.ops;
      for (const [kind, n] of result.faults) faults.set(kind, (faults.get(kind) ?? 0) + n);
      const seen = [...new Set(result.violations.map((v) => v.check))];
      if (values.survey) {
        for (const check of seen) {
          const first = result.violations.find((v) => v.check === check)!;
          console.log(`  ${check}: after ${first.step}: ${first.message.slice(0, 400)}`);
        }
      }
      if (!result.failed) {
        console.log(
          `seed ${seed}: ok, ${result.ops} ops, ${result.delivered} rows delivered ${JSON.stringify(Object.fromEntries(result.deliveredByDataset))}${seen.length ? ` (tolerated: ${seen.join(', ')})` : ''}`,
        );
        continue;
      }
      failures += 1;
      console.log(`seed ${seed}: FAILED after ${result.numShrinks} shrinks`);
      console.log(
        `SLUICE_SIM_SEED=${seed}${result.path ? ` SLUICE_SIM_PATH=${result.path}` : ''} npm run sim -- --ops ${ops}${values.recipe ? ` --recipe ${values.recipe}` : ''}`,
      );
      console.log(`schedule:\n  ${(result.schedule ?? '').split('\n').join('\n  ')}`);
      console.log(result.error ?? '');
    }
  } finally {
    const { stopSimBucketServer } = await import('./world.js');
    await stopSimBucketServer();
    await services.stop();
  }
  const hours = (performance.now() - started) / 3_600_000;
  console.log(
    `${ran} seeds (${first}–${first + ran - 1}) in ${(hours * 60).toFixed(1)} min, ${failures} failed, ${totalOps} ops, ` +
      `faults ${JSON.stringify(Object.fromEntries(faults))}, ${(ran / hours).toFixed(0)} seeds/hour`,
  );
  return failures > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(2);
  },
);
