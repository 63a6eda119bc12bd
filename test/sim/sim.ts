/**
 * The deterministic simulation of issue 20: a seed drives a fast-check schedule of operations (commands) over a
 * few workspaces and exports; each runs through the same paths a user's would (the HTTP API, ingest, the
 * Dispatch and ExportRun workflows, the archive function) under the virtual clock, and the oracle checks the
 * bucket after every step and once the schedule has settled. See "The export contract" in docs/internals.md.
 */
import {
  DATASETS,
  EVENT_DATASETS,
  FIRST_PRODUCT_EVENT_DATASETS,
  type EventDataset,
  EXPORT_FORMATS,
  type ExportFormat,
  FREQUENCIES,
  FREQUENCY_MS,
  type Frequency,
  isEventDataset,
  type Layout,
  RUN_HOUR_FREQUENCIES,
  type Schedule,
  SECOND_PRODUCT_DATASETS,
  type SecondProductDataset,
} from '@sluice/core';
import { type GeneratedDatasetRow, generateDatasetRows, generateEvents } from '@sluice/eventlog';
import fc from 'fast-check';
import { advanceVirtualTime, setVirtualTime, virtualNow } from './clock.js';
import { fileRowId, Model, type ModelConfig, type ModelExport, msOf, personOf } from './model.js';
import { seedRandomBytes } from './random.js';
import {
  BucketHistory,
  type Check,
  checkManifests,
  checkStep,
  checkTotals,
  type ShownTotals,
  missingRows,
  offsetOf,
  type Violation,
} from './oracle.js';
import { datasetOfKey } from './bucket.js';
import { createWorld, type TickFaults, type World } from './world.js';

type Json = Record<string, unknown>;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** Workspaces of one schedule. */
const WORKSPACES = 2;
/** Backfills a flood queues on one export before pausing it (more than Dispatch reads in one page). */
const FLOOD_BACKFILLS = 101;
/** Settling: ticks of 15 minutes after the schedule, faults off, plus two per backfill still to run. */
const SETTLE_TICKS = 40;
const SETTLE_TICK_MS = 15 * MINUTE_MS;
/** The compaction archives an hour this long after it ended (its default `settleMs`), and an hour at most once a run. */
const ARCHIVE_SETTLE_MS = 10 * MINUTE_MS;

/** How a run treats violations. */
export interface SimOptions {
  /** Violations of these checks are recorded but do not fail the schedule (`known-defects.ts`). */
  tolerated?: ReadonlySet<Check>;
  /** Only violations of these checks fail the schedule (to hunt one defect and shrink towards it). */
  only?: ReadonlySet<Check>;
  /** Logs each step. */
  log?: (line: string) => void;
}

/** The simulation's state while one schedule runs. */
export interface Sim {
  world: World;
  model: Model;
  history: BucketHistory;
  options: SimOptions;
  /** Every violation seen (tolerated ones included), with the step it was seen after. */
  violations: (Violation & { step: string })[];
  eventSeed: number;
  steps: number;
  /** The operations run, in order. */
  executed: string[];
  /** Rows in the exports' files once settled. */
  delivered: number;
  /** Of them, by dataset (that the second product's and `run_hour` files are reached at all). */
  deliveredByDataset: Map<EventDataset, number>;
  /** The operation running or last run; undefined once the schedule settles. */
  current?: Op;
  /** Message receipts generated but held back for a later call, per workspace. */
  pendingReceipts: Map<number, GeneratedDatasetRow[]>;
}

/** The violations that fail the schedule. */
function failing(sim: Sim, violations: Violation[]): Violation[] {
  return violations.filter(
    (v) =>
      !sim.options.tolerated?.has(v.check) &&
      (sim.options.only === undefined || sim.options.only.has(v.check)),
  );
}

/** Records the violations; throws (failing the schedule) when one is not tolerated. */
function report(sim: Sim, step: string, violations: Violation[]): void {
  for (const violation of violations) sim.violations.push({ ...violation, step });
  const bad = failing(sim, violations);
  if (bad.length > 0) {
    throw new Error(
      `after ${step}:\n${bad
        .slice(0, 8)
        .map((v) => `  [${v.check}] export #${v.exportRef}: ${v.message}`)
        .join('\n')}`,
    );
  }
}

/** The per-step oracle over every export the schedule created (deleted ones too: nothing of theirs may shrink). */
async function checkAll(sim: Sim, step: string): Promise<void> {
  const violations: Violation[] = [];
  for (const exp of sim.model.exports) {
    const objects = await snapshotOf(sim, exp);
    violations.push(...checkStep(sim.model, exp, objects, sim.history, virtualNow()));
  }
  report(sim, step, violations);
}

/** The objects under every prefix the export has had. */
async function snapshotOf(sim: Sim, exp: ModelExport, prefixes = exp.prefixes) {
  const objects = new Map<string, import('./bucket.js').BucketObjectView>();
  for (const prefix of prefixes)
    for (const [key, object] of await sim.world.bucket.snapshot(`${prefix}/`)) objects.set(key, object);
  return objects;
}

/**
 * Each export keeps its slot: after a run that succeeded (no failures, idle), its next run is on its schedule
 * (minute, and hour when daily) or, without one, on the spread slot its id had at the first such run of that
 * frequency (learned then: the oracle does not compute the engine's hash). A change applies from the next
 * run, so the configuration before the last change is accepted too.
 */
async function checkSlots(sim: Sim, step: string): Promise<void> {
  const violations: Violation[] = [];
  const now = virtualNow();
  const mod = (a: number, b: number) => ((a % b) + b) % b;
  for (const exp of sim.model.liveExports()) {
    const view = (await api(sim, exp.workspace, 'GET', `/data-exports/${exp.id}`)).body.dataExport as
      | Json
      | undefined;
    if (view?.isEnabled !== true || view.consecutiveFailures !== 0 || view.status !== 'idle') continue;
    if (typeof view.nextRunAt !== 'string' || typeof view.lastRunAt !== 'string') continue;
    const next = Date.parse(view.nextRunAt);
    if (next <= now) continue;
    const current = exp.configs.at(-1)!;
    const period = FREQUENCY_MS[current.frequency];
    if (
      current.schedule === null &&
      !exp.spreadOffsets.has(current.frequency) &&
      Date.parse(view.lastRunAt) >= current.sinceMs
    )
      exp.spreadOffsets.set(current.frequency, mod(next, period));
    const fits = exp.configs.slice(-2).some((config) => {
      const offset = offsetOf(exp, config);
      return offset === undefined || mod(next - offset, FREQUENCY_MS[config.frequency]) === 0;
    });
    if (!fits) {
      violations.push({
        check: 'slot',
        exportRef: exp.ref,
        message: `next run ${view.nextRunAt} is off its slot (${JSON.stringify(current)}, spread offsets ${JSON.stringify([...exp.spreadOffsets])})`,
      });
    }
  }
  report(sim, step, violations);
}

async function api(sim: Sim, workspace: number, method: string, path: string, body?: unknown) {
  const client = sim.world.workspaces[workspace]!.client;
  const response = await client.request<Json>(method, path, body === undefined ? {} : { json: body });
  if (response.status >= 500) {
    throw new Error(`${method} ${path} answered ${response.status}: ${response.text.slice(0, 300)}`);
  }
  return response;
}

// ---------------------------------------------------------------------------------------------------------
// Commands

type Real = Sim;
abstract class Op implements fc.AsyncCommand<Model, Real> {
  check(_model: Readonly<Model>): boolean {
    return true;
  }
  async run(_model: Model, sim: Real): Promise<void> {
    sim.steps += 1;
    sim.current = this;
    sim.executed.push(this.toString());
    const started = performance.now();
    await this.apply(sim);
    const applied = performance.now();
    await checkAll(sim, `step ${sim.steps}: ${sim.executed.at(-1)}`);
    const ms = (t: number) => Math.round(t);
    sim.options.log?.(
      `${new Date(virtualNow()).toISOString()} ${sim.executed.at(-1)} (${ms(applied - started)} ms, oracle ${ms(performance.now() - applied)} ms)`,
    );
  }
  abstract apply(sim: Sim): Promise<void>;
  abstract toString(): string;
}

/** An operation on the `k`-th export still alive (modulo their number). */
abstract class ExportOp extends Op {
  constructor(readonly k: number) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.exports.some((exp) => !exp.deleted);
  }
  target(sim: Sim): ModelExport {
    const live = sim.model.liveExports();
    // A negative `k` counts from the newest (a recipe's "the export it just created").
    return this.k < 0
      ? (live.at(Math.max(this.k, -live.length)) as ModelExport)
      : live[this.k % live.length]!;
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const exp = this.target(sim);
    // The export the operation reached, by its simulation number (`#k` counts the live ones only).
    sim.executed[sim.executed.length - 1] += ` → e${exp.ref}`;
    await this.on(sim, exp);
  }
  abstract on(sim: Sim, exp: ModelExport): Promise<void>;
}

/** People per workspace the generated rows are about. */
const PEOPLE = 12;

/**
 * Makes a generated event about one of the workspace's {@link PEOPLE} (chosen by its id): its subscriber id,
 * `email` and `properties.email`. `generateEvents` draws subscribers per seed, and each operation has its own
 * seed, so without this no person would have rows in two operations or two datasets, and an erasure would
 * never have to follow a person across datasets.
 */
function asSimPerson(event: Record<string, unknown>, workspace: number): void {
  const id = String(event.id);
  let hash = 0;
  for (let i = 0; i < id.length; i++) hash = (hash * 31 + id.charCodeAt(i)) >>> 0;
  const person = hash % PEOPLE;
  const email = `person${person}@ws${workspace}.example`;
  if (typeof event.subscriber_id === 'string') event.subscriber_id = `sub_sim${workspace}p${person}`;
  if ('email' in event) event.email = email;
  const properties = event.properties as Record<string, unknown> | undefined;
  if (properties !== undefined && typeof properties === 'object' && 'email' in properties)
    properties.email = email;
}

/**
 * Events of the first product through the bus (recorded at the ingest's clock); `tests` of them are test sends
 * (`test: true`), which ingest drops for the first product's datasets: counted, never exported.
 */
class Ingest extends Op {
  constructor(
    readonly workspace: number,
    readonly count: number,
    readonly dataset: EventDataset,
    readonly tests = 0,
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const now = virtualNow();
    const ws = sim.world.workspaces[this.workspace]!;
    sim.eventSeed += 1;
    const events = [
      ...generateEvents({
        count: this.count,
        seed: sim.eventSeed,
        workspaceId: ws.id,
        from: now - MINUTE_MS,
        to: now,
        recordedAt: false,
        mix: { [this.dataset]: 1 },
      }),
    ];
    for (const event of events) asSimPerson(event, this.workspace);
    const tests = events.slice(0, this.tests).map((event) => ({ ...event, test: true }));
    const result = await ws.ingest.ingestEvents(ws.id, [...tests, ...events.slice(this.tests)]);
    if (result.accepted !== events.length - tests.length || result.dropped.test !== tests.length) {
      const message = `ingest accepted ${result.accepted} and dropped ${result.dropped.test} test sends of ${events.length} (${tests.length} test sends)`;
      report(sim, `step ${sim.steps}: ${sim.executed.at(-1)}`, [{ check: 'ingest', exportRef: -1, message }]);
    }
    for (const event of events.slice(this.tests)) {
      sim.model.rows.set(event.id, {
        workspace: this.workspace,
        dataset: this.dataset,
        recordedMs: now,
        refused: false,
        ...personOf(event),
      });
    }
  }
  toString() {
    const tests = this.tests > 0 ? `, ${Math.min(this.tests, this.count)} test sends` : '';
    return `ingest(ws${this.workspace}, ${this.count} ${this.dataset}${tests})`;
  }
}

/** What a second-product input does, by the dataset's rules as the simulation knows them (issue 24). */
type Outcome = 'emitted' | 'kept' | 'ignored' | 'refused' | 'not_complete' | 'after_completion';

/**
 * Rows of the second product through the bus. Opt-outs and clicks are appended (one row per opt-out, per
 * click). Messages: each new message's first row goes out now; its receipt (a later whole row, a status
 * change) in the same call or held back for a later call, so the message is exported again in a later window;
 * `twists` adds a change with an older or equal `updated_at` (ignored), a change of other fields only
 * (kept, not exported), a change for an unknown message (refused), a change without `updated_at`
 * (refused). Projects: complete ones are exported once; `twists` adds a draft (never exported) and a project
 * sent again after its completion (counted, not exported). Every decision is the simulation's own
 * ({@link decide}); ingest's counts must agree (`ingest`), and each emitted row is expected in the files.
 */
class SecondProductIngest extends Op {
  constructor(
    readonly workspace: number,
    readonly dataset: SecondProductDataset,
    readonly count: number,
    readonly twists: boolean,
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const now = virtualNow();
    const ws = sim.world.workspaces[this.workspace]!;
    sim.eventSeed += 1;
    const generated = [
      ...generateDatasetRows({
        dataset: this.dataset,
        count: this.count,
        seed: sim.eventSeed,
        workspaceId: ws.id,
        from: now - MINUTE_MS,
        // Messages: a receipt for (nearly) each one, some of them held back for a later call.
        to: now + 2 * DAY_MS,
        recordedAt: false,
      }),
    ];
    const inputs = this.inputsOf(sim, generated);
    const result = await ws.ingest.ingestEvents(ws.id, inputs);
    const outcomes = inputs.map((input) =>
      decide(sim.model, this.workspace, input, now, sim.world.retentionMs),
    );
    const count = (kind: Outcome) => outcomes.filter((o) => o === kind).length;
    const counts = result.currentRows;
    const expected = {
      accepted: count('emitted') + count('kept'),
      refused: count('refused'),
      ignored: count('ignored'),
      notComplete: count('not_complete'),
      afterCompletion: count('after_completion'),
    };
    const actual = {
      accepted: result.accepted,
      refused: result.invalid.length,
      ignored: counts?.outOfOrder ?? 0,
      notComplete: counts?.notComplete ?? 0,
      afterCompletion: counts?.afterCompletion ?? 0,
    };
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      const message = `${this.dataset}: ingest says ${JSON.stringify(actual)}, the dataset's rules ${JSON.stringify(expected)}`;
      report(sim, `step ${sim.steps}: ${sim.executed.at(-1)}`, [{ check: 'ingest', exportRef: -1, message }]);
    }
  }

  /** The call's inputs, in order (the held-back receipts of earlier calls among them). */
  private inputsOf(sim: Sim, generated: GeneratedDatasetRow[]): Record<string, unknown>[] {
    if (this.dataset === 'click_events' || this.dataset === 'opt_out_events') return generated;
    if (this.dataset === 'project_summary') {
      if (!this.twists) return generated;
      const [first] = generated;
      const draft = first && {
        ...first,
        project_id: `${String(first.project_id)}d`,
        status: 'draft',
        completed_at: null,
      };
      const done = [...sim.model.completedProjects].find((key) => key.startsWith(`${this.workspace}/`));
      const again = done && { ...sim.model.projectRows.get(done)!, messages_sent: 1 };
      return [...generated, ...(draft ? [draft] : []), ...(again ? [again] : [])];
    }
    // Messages: the first row of each now, its receipt now (odd messages) or later (even ones).
    const pending = sim.pendingReceipts.get(this.workspace) ?? [];
    const seen = new Set<string>();
    const now: Record<string, unknown>[] = [];
    const later: GeneratedDatasetRow[] = [];
    for (const row of generated) {
      const id = String(row.message_id);
      if (!seen.has(id)) {
        seen.add(id);
        now.push(row);
      } else if (seen.size % 2 === 1) now.push(row);
      else later.push(row);
    }
    sim.pendingReceipts.set(this.workspace, later);
    const inputs = [...now, ...pending];
    if (this.twists) {
      // Messages of this workspace Sluice still remembers (its current row sent again would be a new message
      // otherwise, and the same row delivered twice: the producer's resend, at least once).
      const nowMs = virtualNow();
      const known = [...sim.model.messages].filter(
        ([key, state]) =>
          key.startsWith(`${this.workspace}/`) && nowMs <= state.changedMs + sim.world.retentionMs,
      );
      const [key, current] = known[sim.eventSeed % Math.max(1, known.length)] ?? [];
      if (key !== undefined && current !== undefined) {
        const messageId = key.slice(key.indexOf('/') + 1);
        const laterMs = current.updatedMs + 1_000;
        inputs.push(
          // The current row again (equal `updated_at`): ignored.
          { ...current.row },
          // Other fields only: kept, not exported until the next status change.
          {
            dataset: 'message_events',
            message_id: messageId,
            url_click_count: 7,
            updated_at: new Date(laterMs).toISOString(),
          },
          // An older change: ignored.
          {
            dataset: 'message_events',
            message_id: messageId,
            status: 'failed',
            updated_at: new Date(laterMs - 10_000).toISOString(),
          },
          // No `updated_at`: refused.
          { dataset: 'message_events', message_id: messageId, status: 'failed' },
        );
      }
      // An unknown message: refused.
      inputs.push({
        dataset: 'message_events',
        message_id: `msg_unknown${sim.eventSeed}`,
        status: 'delivered',
        updated_at: new Date(virtualNow()).toISOString(),
      });
    }
    return inputs;
  }
  toString() {
    return `ingest2(ws${this.workspace}, ${this.count} ${this.dataset}${this.twists ? ', twists' : ''})`;
  }
}

/**
 * What one second-product input does (the simulation's own reading of the rules; the engine's is
 * `@sluice/core`'s `current-rows.ts`), recording each row it emits as a row the exports owe.
 */
function decide(
  model: Model,
  workspace: number,
  input: Record<string, unknown>,
  nowMs: number,
  retentionMs: number,
): Outcome {
  const dataset = input.dataset as SecondProductDataset;
  const base = { workspace, dataset, recordedMs: nowMs, refused: false };
  const { dataset: _dataset, ...fields } = input;
  if (dataset === 'message_events') {
    const messageId = String(fields.message_id);
    const key = `${workspace}/${messageId}`;
    const kept = model.messages.get(key);
    // Forgotten a retention after its last change.
    const current = kept !== undefined && nowMs <= kept.changedMs + retentionMs ? kept : undefined;
    // A whole row (a new message) carries every column; the generator's rows do.
    if (current === undefined && !('direction' in fields)) return 'refused';
    if (current !== undefined && (fields.updated_at === undefined || fields.updated_at === null))
      return 'refused';
    const updatedMs = Number(msOf(fields.updated_at));
    if (current !== undefined && updatedMs <= current.updatedMs) return 'ignored';
    const row = { ...(current?.row ?? {}), ...input };
    const status = String(row.status);
    model.messages.set(key, { status, updatedMs, row, changedMs: nowMs });
    if (current !== undefined && current.status === status) return 'kept';
    model.addRow(fileRowId(dataset, row), { ...base, key: messageId, updatedMs, status });
    return 'emitted';
  }
  if (dataset === 'project_summary') {
    const key = `${workspace}/${String(fields.project_id)}`;
    if (model.completedProjects.has(key)) return 'after_completion';
    if (fields.completed_at === null || fields.completed_at === undefined) return 'not_complete';
    model.completedProjects.add(key);
    model.projectRows.set(key, input);
    model.addRow(fileRowId(dataset, fields), { ...base, key: String(fields.project_id) });
    return 'emitted';
  }
  model.addRow(fileRowId(dataset, fields), base);
  return 'emitted';
}

/** An import with explicit recorded times (`sluice events import`): late rows, expired rows, rows behind an export. */
class Import extends Op {
  constructor(
    readonly workspace: number,
    readonly dataset: EventDataset,
    readonly ageMs: number,
    readonly count: number,
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const ws = sim.world.workspaces[this.workspace]!;
    for (let i = 0; i < this.count; i++) {
      const recordedMs = virtualNow() - this.ageMs + i;
      sim.eventSeed += 1;
      const [event] = [
        ...generateEvents({
          count: 1,
          seed: sim.eventSeed,
          workspaceId: ws.id,
          from: recordedMs - 1,
          to: recordedMs,
          mix: { [this.dataset]: 1 },
        }),
      ];
      asSimPerson(event!, this.workspace);
      const result = await ws.imports.ingestEvents(ws.id, [event!]);
      sim.model.rows.set(event!.id, {
        workspace: this.workspace,
        dataset: this.dataset,
        recordedMs: Date.parse(String(event!.recorded_at)),
        refused: result.accepted !== 1,
        ...personOf(event!),
      });
    }
  }
  toString() {
    return `import(ws${this.workspace}, ${this.count} ${this.dataset} recorded ${duration(this.ageMs)} ago)`;
  }
}

/** `layout` and `schedule` of a create or an update (`run_hour` with a schedule, or without: the spread slot). */
export interface LayoutChoice {
  layout: Layout;
  schedule?: Schedule | null;
}

class CreateExport extends Op {
  constructor(
    readonly workspace: number,
    readonly datasets: EventDataset[],
    readonly frequency: Frequency,
    readonly format: ExportFormat,
    /** `startFrom` this far back; undefined: none (the creation time). */
    readonly startAgoMs: number | undefined,
    readonly layout: LayoutChoice = { layout: 'date' },
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const now = virtualNow();
    const ref = sim.model.exports.length;
    const prefix = `sim-${sim.world.runId}/e${ref}`;
    const dueFromMs = this.startAgoMs === undefined ? now : now - this.startAgoMs;
    // `run_hour`: the first window is whole (docs/internals.md, "The run_hour layout"), so rows of up to two
    // windows before the start may go out (not owed).
    const startMs =
      this.layout.layout === 'run_hour' ? dueFromMs - 2 * FREQUENCY_MS[this.frequency] : dueFromMs;
    const response = await api(sim, this.workspace, 'POST', '/data-exports', {
      name: `sim ${ref}`,
      provider: 's3',
      bucket: sim.world.bucket.bucket,
      endpoint: sim.world.s3Endpoint,
      pathPrefix: prefix,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      datasets: this.datasets,
      frequency: this.frequency,
      format: this.format,
      ...(this.layout.layout === 'date' ? {} : this.layout),
      ...(this.startAgoMs === undefined ? {} : { startFrom: new Date(dueFromMs).toISOString() }),
    });
    // A `run_hour` export of a frequency it does not take is refused (400): nothing created.
    if (response.status === 400 && this.layout.layout === 'run_hour') return;
    if (response.status !== 201) throw new Error(`create answered ${response.status}: ${response.text}`);
    const view = response.body.dataExport as Json;
    const id = String(view.id);
    sim.model.exports.push({
      ref,
      workspace: this.workspace,
      workspaceId: sim.world.workspaces[this.workspace]!.id,
      id,
      prefix,
      prefixes: [prefix],
      createdMs: now,
      startMs,
      dueFromMs,
      frequency: this.frequency,
      frequencies: new Set([this.frequency]),
      formats: [{ sinceMs: now, format: this.format }],
      configs: [configOf(view, now)],
      spreadOffsets: new Map(),
      memberships: new Map(this.datasets.map((d) => [d, [{ addedMs: startMs }]])),
      enabled: true,
      deleted: false,
      backfills: [],
    });
  }
  toString() {
    const start = this.startAgoMs === undefined ? 'now' : `${duration(this.startAgoMs)} ago`;
    const layout = this.layout.layout === 'date' ? '' : `, ${JSON.stringify(this.layout)}`;
    return `create(ws${this.workspace}, [${this.datasets.join(',')}], ${this.frequency}, ${this.format}, start ${start}${layout})`;
  }
}

/** The layout, frequency and schedule an export's view shows, from `sinceMs`. */
function configOf(view: Json, sinceMs: number): ModelConfig {
  return {
    sinceMs,
    layout: view.layout === 'run_hour' ? 'run_hour' : 'date',
    frequency: view.frequency as Frequency,
    schedule: (view.schedule as Schedule | null | undefined) ?? null,
  };
}

/** Records a change of layout, frequency or schedule the API accepted (its view after the change). */
function recordConfig(exp: ModelExport, view: Json | undefined, nowMs: number): void {
  if (view === undefined) return;
  const next = configOf(view, nowMs);
  const last = exp.configs.at(-1)!;
  if (
    next.layout !== last.layout ||
    next.frequency !== last.frequency ||
    JSON.stringify(next.schedule) !== JSON.stringify(last.schedule)
  )
    exp.configs.push(next);
}

/** The changes an update makes (a list: another change is one more entry here and in its arbitrary). */
export type Change =
  | { format: ExportFormat }
  | { frequency: Frequency }
  | { datasets: EventDataset[] }
  | LayoutChoice
  | { schedule: Schedule | null };

class Update extends ExportOp {
  constructor(
    k: number,
    readonly change: Change,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, this.change);
    if (response.status !== 200) return;
    const now = virtualNow();
    recordConfig(exp, response.body.dataExport as Json | undefined, now);
    if ('format' in this.change && this.change.format !== exp.formats.at(-1)!.format) {
      exp.formats.push({ sinceMs: now, format: this.change.format });
    }
    if ('frequency' in this.change) {
      exp.frequency = this.change.frequency;
      exp.frequencies.add(this.change.frequency);
    }
    if ('datasets' in this.change) {
      const wanted = new Set(this.change.datasets);
      for (const dataset of EVENT_DATASETS) {
        const list = exp.memberships.get(dataset) ?? [];
        const open = list.at(-1)?.removedMs === undefined && list.length > 0;
        if (wanted.has(dataset) && !open) exp.memberships.set(dataset, [...list, { addedMs: now }]);
        if (!wanted.has(dataset) && open) list.at(-1)!.removedMs = now;
      }
    }
  }
  toString() {
    return `update(#${this.k}, ${JSON.stringify(this.change)})`;
  }
}

/**
 * Parent organisations (issue 27), on the target export's workspace and the other one: the operator links or
 * unlinks the other as its child (the `OrganizationStore` that `sluice orgs link|unlink` uses), or the export's
 * `childOrganizations` is set to it or emptied (PATCH, the API path of `update`). A refusal (a second parent, a
 * child of a child, not a child, a PATCH naming a workspace that is not a current child) changes nothing.
 */
export type OrganizeAction = 'link' | 'unlink' | 'list' | 'unlist';
class Organize extends ExportOp {
  constructor(
    k: number,
    readonly action: OrganizeAction,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const now = virtualNow();
    const child = (exp.workspace + 1) % sim.world.workspaces.length;
    const childId = sim.world.workspaces[child]!.id;
    if (this.action === 'link' || this.action === 'unlink') {
      try {
        if (this.action === 'link')
          await sim.world.organizations.link(exp.workspaceId, childId, new Date(now));
        else await sim.world.organizations.unlink(exp.workspaceId, childId, new Date(now));
      } catch (error) {
        if (['ConflictError', 'NotFoundError', 'InvalidInputError'].includes((error as Error).name)) return;
        throw error;
      }
      if (this.action === 'link') sim.model.links.push({ parent: exp.workspace, child, linkedMs: now });
      const open = sim.model.links.find(
        (link) => link.parent === exp.workspace && link.child === child && link.unlinkedMs === undefined,
      );
      if (this.action === 'unlink' && open !== undefined) open.unlinkedMs = now;
      return;
    }
    const list = this.action === 'list' ? [childId] : [];
    const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, {
      childOrganizations: list,
    });
    if (response.status !== 200) return;
    exp.children ??= [];
    const listed = exp.children.find((entry) => entry.removedMs === undefined);
    if (this.action === 'list' && listed === undefined) exp.children.push({ child, childId, addedMs: now });
    if (this.action === 'unlist' && listed !== undefined) listed.removedMs = now;
  }
  toString() {
    return `organize(#${this.k}, ${this.action})`;
  }
}

class SetEnabled extends ExportOp {
  constructor(
    k: number,
    readonly enabled: boolean,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, {
      isEnabled: this.enabled,
    });
    if (response.status === 200) exp.enabled = this.enabled;
  }
  toString() {
    return `${this.enabled ? 'resume' : 'pause'}(#${this.k})`;
  }
}

/**
 * The customer revokes the export's keys (its uploads are then refused: runs fail, the export is `failing`), or
 * replaces them (a PATCH with keys that work: the backoff ends and the export catches up). Settling replaces
 * every revoked key first.
 */
class Credentials extends ExportOp {
  constructor(
    k: number,
    readonly revoke: boolean,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    if (this.revoke) sim.world.revoked.add(`${exp.prefix}/`);
    else await replaceKeys(sim, exp);
  }
  toString() {
    return `${this.revoke ? 'revokeKeys' : 'replaceKeys'}(#${this.k})`;
  }
}

async function replaceKeys(sim: Sim, exp: ModelExport): Promise<void> {
  const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, {
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
  });
  if (response.status !== 200) throw new Error(`new keys answered ${response.status}: ${response.text}`);
  sim.world.revoked.delete(`${exp.prefix}/`);
}

/** The customer moves the export to another path prefix (with its keys, as a move asks). */
class Move extends ExportOp {
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const prefix = `${exp.prefixes[0]}m${exp.prefixes.length}`;
    const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, {
      pathPrefix: prefix,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
    });
    if (response.status !== 200) throw new Error(`move answered ${response.status}: ${response.text}`);
    sim.world.revoked.delete(`${exp.prefix}/`);
    exp.prefix = prefix;
    exp.prefixes.push(prefix);
  }
  toString() {
    return `movePrefix(#${this.k})`;
  }
}

class RunNow extends ExportOp {
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    await api(sim, exp.workspace, 'POST', `/data-exports/${exp.id}/run`);
  }
  toString() {
    return `runNow(#${this.k})`;
  }
}

class Delete extends ExportOp {
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const response = await api(sim, exp.workspace, 'DELETE', `/data-exports/${exp.id}`);
    if (response.status === 200) exp.deleted = true;
  }
  toString() {
    return `delete(#${this.k})`;
  }
}

/** A range backfill (`hoursAgo` back, `hours` long) or a full history (`hoursAgo` undefined). */
class Backfill extends ExportOp {
  constructor(
    k: number,
    readonly hoursAgo: number | undefined,
    readonly hours: number,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    await requestBackfill(sim, exp, this.hoursAgo, this.hours);
  }
  toString() {
    return this.hoursAgo === undefined
      ? `backfill(#${this.k}, full history)`
      : `backfill(#${this.k}, ${this.hoursAgo} h ago, ${this.hours} h)`;
  }
}

async function requestBackfill(sim: Sim, exp: ModelExport, hoursAgo: number | undefined, hours: number) {
  const now = virtualNow();
  const fromMs = hoursAgo === undefined ? 0 : now - hoursAgo * HOUR_MS;
  const toMs = hoursAgo === undefined ? now : Math.min(now, fromMs + hours * HOUR_MS);
  const body =
    hoursAgo === undefined
      ? { from: 'earliest' }
      : { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() };
  const response = await api(sim, exp.workspace, 'POST', `/data-exports/${exp.id}/backfills`, body);
  if (response.status !== 202) return;
  const backfill = response.body.backfill as Json;
  exp.backfills.push({
    id: String(backfill.id),
    datasets: (backfill.datasets as string[]).filter(
      (d): d is EventDataset => isDataset(d) && isEventDataset(d),
    ),
    fromMs,
    toMs,
    createdMs: now,
    frequency: exp.frequency,
    cancelled: false,
  });
}

function isDataset(value: string): value is (typeof DATASETS)[number] {
  return (DATASETS as readonly string[]).includes(value);
}

/** Many small backfills queued on one export, which is then paused: its queue must not hold back the others. */
class Flood extends ExportOp {
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    for (let i = 0; i < FLOOD_BACKFILLS; i++) await requestBackfill(sim, exp, 2, 0.25);
    const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, { isEnabled: false });
    if (response.status === 200) exp.enabled = false;
  }
  toString() {
    return `flood(#${this.k}, ${FLOOD_BACKFILLS} backfills, then pause)`;
  }
}

class Cancel extends ExportOp {
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const open = exp.backfills.filter((b) => !b.cancelled);
    const backfill = open.at(-1);
    if (backfill === undefined) return;
    const response = await api(
      sim,
      exp.workspace,
      'DELETE',
      `/data-exports/${exp.id}/backfills/${backfill.id}`,
    );
    if (response.status === 200) backfill.cancelled = true;
  }
  toString() {
    return `cancelLastBackfill(#${this.k})`;
  }
}

/**
 * The scheduled archive compaction; the oracle then learns which rows the archive holds, from the archive bucket,
 * and checks that it holds every row it must: each row accepted (not refused, not erased) into an hour from the
 * archive's first hour on that ended at least the compaction's settling time ago and that the hot log still
 * holds whole, imported late rows included (an hour imported into after it was archived is archived again).
 */
class Compact extends Op {
  async apply(sim: Sim): Promise<void> {
    await sim.world.compact();
    const now = virtualNow();
    sim.model.archiveThroughMs = Math.floor((now - ARCHIVE_SETTLE_MS) / HOUR_MS) * HOUR_MS;
    const missing: Violation[] = [];
    // The archive of every workspace and dataset starts at the hour of the hot horizon of the first compaction.
    sim.model.archiveStartMs ??= Math.floor((now - sim.world.retentionMs) / HOUR_MS) * HOUR_MS;
    const startMs = sim.model.archiveStartMs;
    for (const [w, ws] of sim.world.workspaces.entries()) {
      for (const object of (await sim.world.archive.snapshot(`archive/${ws.id}/`)).values()) {
        for (const id of object.ids ?? []) sim.model.archived.add(id);
      }
      const unarchived = new Map<string, { count: number; example: string }>();
      for (const [id, row] of sim.model.rows) {
        if (row.workspace !== w || row.refused || row.erasedMs !== undefined || sim.model.archived.has(id))
          continue;
        const hourMs = Math.floor(row.recordedMs / HOUR_MS) * HOUR_MS;
        if (hourMs < startMs || hourMs + HOUR_MS + ARCHIVE_SETTLE_MS > now) continue;
        if (hourMs < now - sim.world.retentionMs + HOUR_MS) continue;
        const entry = unarchived.get(row.dataset) ?? {
          count: 0,
          example: `${id} recorded ${iso(row.recordedMs)}`,
        };
        entry.count += 1;
        unarchived.set(row.dataset, entry);
      }
      for (const [dataset, { count, example }] of unarchived) {
        missing.push({
          check: 'archived',
          exportRef: -1,
          message: `ws${w} ${dataset}: ${count} rows of archived hours are not in the archive (${example})`,
        });
      }
    }
    report(sim, `step ${sim.steps}: ${sim.executed.at(-1)}`, missing);
  }
  toString() {
    return 'compactArchive()';
  }
}

/**
 * `sluice erase` of one person (the `pick`-th subscriber id or address the workspace's rows name). The oracle
 * then expects the person's rows (by the contract's rule, {@link Model.personRows}) gone from the archive at
 * once, in no file written after, and no longer due.
 */
class Erase extends Op {
  constructor(
    readonly workspace: number,
    readonly by: 'subscriber' | 'email',
    readonly pick: number,
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const now = virtualNow();
    const named = new Set<string>();
    for (const row of sim.model.rows.values()) {
      if (row.workspace !== this.workspace || row.erasedMs !== undefined) continue;
      if (this.by === 'subscriber' && row.subscriberId) named.add(row.subscriberId);
      if (this.by === 'email' && row.dataset === 'email_events')
        for (const e of row.emails ?? []) named.add(e);
    }
    const choices = [...named].sort();
    const chosen = choices[this.pick % Math.max(1, choices.length)];
    if (chosen === undefined) return;
    const target = this.by === 'subscriber' ? { subscriberId: chosen } : { email: chosen };
    sim.executed[sim.executed.length - 1] += ` → ${chosen}`;
    // Reached: the hot log's searched days (retention plus three days of TTL slack), or the archive.
    const searchedFromMs = now - sim.world.retentionMs - 3 * DAY_MS;
    const erased = sim.model.personRows(
      this.workspace,
      target,
      (id, row) => row.recordedMs > searchedFromMs || sim.model.archived.has(id),
    );
    await sim.world.erase(this.workspace, target);
    for (const id of erased) {
      sim.model.rows.get(id)!.erasedMs = now;
      sim.model.archived.delete(id);
    }
    // The archive keeps none of them.
    const gone = new Set(erased);
    const left: Violation[] = [];
    const ws = sim.world.workspaces[this.workspace]!;
    for (const object of (await sim.world.archive.snapshot(`archive/${ws.id}/`)).values()) {
      const kept = (object.ids ?? []).filter((id) => gone.has(id));
      if (kept.length > 0) {
        left.push({
          check: 'erased',
          exportRef: -1,
          message: `archive ${object.key} still holds ${kept.length} erased rows (${kept[0]})`,
        });
      }
    }
    report(sim, `step ${sim.steps}: ${sim.executed.at(-1)}`, left);
  }
  toString() {
    return `erase(ws${this.workspace}, ${this.by} #${this.pick})`;
  }
}

/** The clock moves, then Dispatch ticks (with the faults given, for this tick only). */
class Tick extends Op {
  constructor(
    readonly advanceMs: number,
    readonly kind: 'tick' | 'midnight' | 'retention',
    readonly fault: keyof TickFaults | undefined,
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    const now = virtualNow();
    if (this.kind === 'midnight') setVirtualTime(Math.ceil((now + 1) / DAY_MS) * DAY_MS + this.advanceMs);
    else if (this.kind === 'retention') setVirtualTime(now + sim.world.retentionMs + this.advanceMs);
    else setVirtualTime(now + this.advanceMs);
    await dispatchTick(sim, this.fault);
  }
  toString() {
    const what =
      this.kind === 'midnight'
        ? `past midnight +${duration(this.advanceMs)}`
        : this.kind === 'retention'
          ? `past the retention +${duration(this.advanceMs)}`
          : `+${duration(this.advanceMs)}`;
    return `tick(${what}${this.fault ? `, fault ${this.fault}` : ''})`;
  }
}

/** One Dispatch tick at the current virtual time, with `fault` for this tick only; then the slots are checked. */
async function dispatchTick(sim: Sim, fault: keyof TickFaults | undefined): Promise<void> {
  sim.model.markLapsed(virtualNow(), sim.world.retentionMs);
  if (fault) {
    sim.world.faults[fault] = true;
    sim.model.countFault(fault);
  }
  try {
    await sim.world.dispatch();
  } finally {
    for (const key of Object.keys(sim.world.faults)) delete sim.world.faults[key as keyof TickFaults];
  }
  await checkSlots(sim, `step ${sim.steps}: ${sim.executed.at(-1)}`);
}

/**
 * Ingest into a dataset a live export has (the `pick`-th live export, its `pick`-th current dataset), so that
 * the rows of a schedule reach files: the first product's through {@link Ingest}, the second's through
 * {@link SecondProductIngest}.
 */
class IngestLive extends Op {
  constructor(
    readonly pick: number,
    readonly count: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return model.exports.some((exp) => !exp.deleted);
  }
  async apply(sim: Sim): Promise<void> {
    const live = sim.model.liveExports();
    const exp = live[this.pick % live.length]!;
    const datasets = sim.model.currentDatasets(exp);
    const dataset = datasets[this.pick % Math.max(1, datasets.length)];
    if (dataset === undefined) {
      advanceVirtualTime(1_000);
      return;
    }
    sim.executed[sim.executed.length - 1] += ` → ws${exp.workspace} ${dataset}`;
    await ingestInto(sim, exp.workspace, dataset, this.count);
  }
  toString() {
    return `ingestLive(#${this.pick}, ${this.count})`;
  }
}

/**
 * Ingest into the child organisation {@link Organize} links under export `k`'s workspace (the next workspace),
 * into the `pick`-th of the datasets the export currently has: the rows the export owes while the child is
 * linked and listed, and no others.
 */
class IngestChild extends ExportOp {
  constructor(
    k: number,
    readonly pick: number,
    readonly count: number,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const child = (exp.workspace + 1) % sim.world.workspaces.length;
    const datasets = sim.model.currentDatasets(exp);
    const dataset = datasets[this.pick % Math.max(1, datasets.length)];
    if (dataset === undefined) return;
    sim.executed[sim.executed.length - 1] += ` ws${child} ${dataset}`;
    await ingestInto(sim, child, dataset, this.count);
  }
  toString() {
    return `ingestChild(#${this.k}, ${this.pick}, ${this.count})`;
  }
}

/** `count` rows into `workspace`'s `dataset`: the first product's through {@link Ingest}, the second's through {@link SecondProductIngest}. */
async function ingestInto(sim: Sim, workspace: number, dataset: EventDataset, count: number): Promise<void> {
  const op = (FIRST_PRODUCT_EVENT_DATASETS as readonly string[]).includes(dataset)
    ? new Ingest(workspace, count, dataset)
    : new SecondProductIngest(workspace, dataset as SecondProductDataset, count, false);
  await op.apply(sim);
}

/**
 * The clock moves so that the event log's retention horizon falls just after the `pick`-th distinct recorded
 * time of the rows export `k` may deliver (its workspace and current datasets, after its start, still
 * available; never the last one): a window delivered with rows on both sides of that time now lost the
 * earlier ones. Then Dispatch ticks.
 */
class ExpireInto extends ExportOp {
  constructor(
    k: number,
    readonly pick: number,
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const now = virtualNow();
    const datasets = new Set(sim.model.currentDatasets(exp));
    const times = [
      ...new Set(
        [...sim.model.rows.values()]
          .filter(
            (row) =>
              row.workspace === exp.workspace &&
              datasets.has(row.dataset) &&
              !row.refused &&
              row.recordedMs > exp.startMs &&
              row.recordedMs + sim.world.retentionMs > now,
          )
          .map((row) => row.recordedMs),
      ),
    ].sort((a, b) => a - b);
    const chosen = times.length > 1 ? times[this.pick % (times.length - 1)] : undefined;
    if (chosen !== undefined) {
      setVirtualTime(chosen + sim.world.retentionMs + 1);
      sim.executed[sim.executed.length - 1] += ` (horizon after ${iso(chosen)})`;
    }
    await dispatchTick(sim, undefined);
  }
  toString() {
    return `expireInto(#${this.k}, ${this.pick})`;
  }
}

/**
 * A recipe: a few of the operations above in order, one step of the schedule (each checked as it runs). The
 * generator's recipes steer schedules to where features meet (a partial run then a format change, a
 * frequency change then a backfill, a backfill into expiring rows, a queue of backfills beside another
 * workspace's); their operations stay the ordinary ones, so every check applies.
 */
class Steps extends Op {
  constructor(
    readonly name: string,
    readonly ops: Op[],
  ) {
    super();
  }
  override async run(model: Model, sim: Real): Promise<void> {
    try {
      for (const op of this.ops) if (op.check(model)) await op.run(model, sim);
    } finally {
      sim.current = this;
    }
  }
  async apply(): Promise<void> {}
  toString() {
    return `${this.name}[${this.ops.join('; ')}]`;
  }
}

/** The recipes (see {@link Steps}) by name; `ws` a workspace, `pick` a choice among the model's things. */
function recipes(): Record<string, fc.Arbitrary<Steps>> {
  const ws = fc.nat(WORKSPACES - 1);
  const pick = fc.nat(50);
  const eventDatasets = fc.subarray([...EVENT_DATASETS], { minLength: 1, maxLength: 3 });
  const tick = (ms: number, fault?: keyof TickFaults) => new Tick(ms, 'tick', fault);
  const ingest = (p: number) => new IngestLive(p, 5 + (p % 20));
  const format = fc.constantFrom(...EXPORT_FORMATS);
  return {
    // Rows over a backlog, a partial run through it, then the other format, more rows, and a backfill over it all.
    partialThenFormat: fc
      .tuple(ws, datasetArb, eventDatasets, format)
      .map(
        ([w, d, more, f]) =>
          new Steps('partialThenFormat', [
            new CreateExport(w, [...new Set([d, ...more])], 'every_5_minutes', f, 3 * HOUR_MS),
            new Import(w, d, 150 * MINUTE_MS, 2),
            new Import(w, d, 100 * MINUTE_MS, 2),
            new Import(w, d, 50 * MINUTE_MS, 2),
            tick(5 * MINUTE_MS, 'budgetSpent'),
            new Update(-1, { format: EXPORT_FORMATS.find((other) => other !== f)! }),
            new Ingest(w, 5, d),
            tick(15 * MINUTE_MS),
            new Backfill(-1, undefined, 0),
            tick(15 * MINUTE_MS),
          ]),
      ),
    // A finer grid, then a coarser one mid-cell, then a backfill of the whole history.
    finerThenCoarser: fc
      .tuple(ws, eventDatasets, format, pick, fc.constantFrom<Frequency>('hourly', 'daily'))
      .map(
        ([w, d, f, p, coarser]) =>
          new Steps('finerThenCoarser', [
            new CreateExport(w, d, 'every_5_minutes', f, undefined),
            ingest(p),
            tick(15 * MINUTE_MS),
            ingest(p + 1),
            new Update(-1, { frequency: coarser }),
            ingest(p + 2),
            new Tick(HOUR_MS, coarser === 'daily' ? 'midnight' : 'tick', undefined),
            ingest(p + 3),
            new Backfill(-1, undefined, 0),
            tick(HOUR_MS),
          ]),
      ),
    // The horizon moves into a delivered window, then a backfill of the whole history (its first window lost rows).
    expiringBackfill: fc
      .tuple(ws, datasetArb, format, pick)
      .map(
        ([w, d, f, q]) =>
          new Steps('expiringBackfill', [
            new CreateExport(w, [d], 'hourly', f, 3 * HOUR_MS),
            new Ingest(w, 5, d),
            tick(15 * MINUTE_MS),
            new Ingest(w, 5, d),
            tick(HOUR_MS),
            new ExpireInto(-1, q),
            new Backfill(-1, undefined, 0),
            tick(MINUTE_MS),
          ]),
      ),
    // Rows recorded before an export's exact start, inside its first cell.
    beforeStart: fc
      .tuple(ws, datasetArb, format, fc.constantFrom<Frequency>('every_5_minutes', 'hourly'))
      .map(
        ([w, d, f, frequency]) =>
          new Steps('beforeStart', [
            new Ingest(w, 5, d),
            new CreateExport(w, [d], frequency, f, undefined),
            new Ingest(w, 5, d),
            tick(HOUR_MS),
          ]),
      ),
    // A queue of backfills on a paused export, and another workspace's backfill of rows from before its start.
    floodBeside: fc.tuple(ws, datasetArb, format).map(
      ([w, d, f]) =>
        new Steps('floodBeside', [
          new Ingest(1 - w, 10, d),
          new CreateExport(w, [d], 'hourly', f, 3 * HOUR_MS),
          new CreateExport(1 - w, [d], 'hourly', f, undefined),
          // Past the rows' cell and the lag: a backfill asked for now owes them.
          tick(2 * HOUR_MS),
          new Flood(-2),
          new Backfill(-1, undefined, 0),
          tick(15 * MINUTE_MS),
        ]),
    ),
    // A person's rows in several datasets, archived, then erased by address.
    eraseAcross: fc
      .tuple(ws, pick)
      .map(
        ([w, p]) =>
          new Steps('eraseAcross', [
            ...FIRST_PRODUCT_EVENT_DATASETS.map((d) => new Ingest(w, 12, d)),
            tick(3 * HOUR_MS),
            new Compact(),
            new Erase(w, 'email', p),
            tick(15 * MINUTE_MS),
          ]),
      ),
    // An import into an hour already archived, then the next compaction.
    importArchived: fc
      .tuple(ws, datasetArb, pick)
      .map(
        ([w, d, p]) =>
          new Steps('importArchived', [
            new Ingest(w, 5, d),
            tick(3 * HOUR_MS),
            new Compact(),
            new Import(w, d, 2 * HOUR_MS, 2),
            tick(HOUR_MS),
            new Compact(),
            new Erase(w, p % 2 === 0 ? 'email' : 'subscriber', p),
          ]),
      ),
    // A child organisation linked under an export's workspace and listed, its rows in the export's datasets,
    // then unlinked or unlisted, more of its rows (not owed), and maybe a backfill over it all.
    childOrganization: fc
      .tuple(
        ws,
        eventDatasets,
        format,
        pick,
        fc.constantFrom<Frequency>('every_5_minutes', 'hourly'),
        fc.constantFrom<OrganizeAction>('unlink', 'unlist'),
        fc.boolean(),
      )
      .map(([w, d, f, p, frequency, end, backfill]) => {
        const child = (q: number) => new IngestChild(-1, q, 5 + (q % 10));
        return new Steps('childOrganization', [
          new CreateExport(w, d, frequency, f, undefined),
          child(p),
          new Organize(-1, 'link'),
          new Organize(-1, 'list'),
          child(p + 1),
          ingest(p),
          tick(15 * MINUTE_MS),
          child(p + 2),
          tick(HOUR_MS),
          new Organize(-1, end),
          child(p + 3),
          tick(HOUR_MS),
          ...(backfill ? [new Backfill(-1, undefined, 0), tick(15 * MINUTE_MS)] : []),
        ]);
      }),
  };
}

/** Any of the recipes. */
function recipeArbitrary(): fc.Arbitrary<Steps> {
  return fc.oneof(...Object.values(recipes()));
}

/**
 * A schedule of one recipe, its parameters drawn from `seed`: a fixed case that names its recipe keeps it when
 * an operation or a recipe is added to the generator.
 */
export function recipeSchedule(name: string, seed: number): fc.AsyncCommand<Model, Real>[] {
  const recipe = recipes()[name];
  if (recipe === undefined) throw new Error(`unknown recipe ${name} (${Object.keys(recipes()).join(', ')})`);
  return fc.sample(recipe, { seed, numRuns: 1 });
}

// ---------------------------------------------------------------------------------------------------------
// The schedule

// The first product's rows come from `generateEvents`, the second's from `generateDatasetRows`; exports take
// any event datasets (of both products).
const datasetArb = fc.constantFrom(...FIRST_PRODUCT_EVENT_DATASETS);
const datasetsArb = fc.subarray([...EVENT_DATASETS], { minLength: 1 });
const exportRef = fc.nat(7);
/** A schedule for `frequency` (`hour` only when daily), or none (the spread slot). */
const scheduleArb = (frequency: Frequency) =>
  fc.option(
    fc
      .tuple(fc.constantFrom(0, 5, 30, 55), fc.constantFrom(0, 8, 23))
      .map(([minute, hour]): Schedule => (frequency === 'daily' ? { minute, hour } : { minute })),
    { nil: null, freq: 2 },
  );
/** `date` (mostly), or `run_hour` on a frequency it takes, with or without a schedule. */
const layoutArb = (frequency: Frequency): fc.Arbitrary<LayoutChoice & { frequency: Frequency }> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant({ layout: 'date' as const, frequency }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...RUN_HOUR_FREQUENCIES).chain((f) =>
        scheduleArb(f).map((schedule) => ({
          layout: 'run_hour' as const,
          frequency: f,
          ...(schedule ? { schedule } : {}),
        })),
      ),
    },
  );

/** The operations and their weights. */
export function commandArbitraries(): fc.WeightedArbitrary<fc.AsyncCommand<Model, Real>>[] {
  const ws = fc.nat(WORKSPACES - 1);
  const ingest = fc
    .tuple(
      ws,
      fc.integer({ min: 1, max: 80 }),
      datasetArb,
      fc.oneof(
        { weight: 4, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) },
      ),
    )
    .map(([w, n, d, tests]) => new Ingest(w, n, d, tests));
  const ingest2 = fc
    .tuple(ws, fc.constantFrom(...SECOND_PRODUCT_DATASETS), fc.integer({ min: 1, max: 20 }), fc.boolean())
    .map(([w, d, n, twists]) => new SecondProductIngest(w, d, n, twists));
  const imports = fc
    .tuple(
      ws,
      datasetArb,
      fc.constantFrom(30_000, 5 * MINUTE_MS, 20 * MINUTE_MS, 2 * HOUR_MS, DAY_MS, 4 * DAY_MS),
      fc.integer({ min: 1, max: 3 }),
    )
    .map(([w, d, age, n]) => new Import(w, d, age, n));
  const create = fc
    .tuple(
      ws,
      datasetsArb,
      fc.constantFrom(...FREQUENCIES),
      fc.constantFrom(...EXPORT_FORMATS),
      fc.option(fc.constantFrom(10 * MINUTE_MS, 3 * HOUR_MS, 2 * DAY_MS, 29 * DAY_MS), { nil: undefined }),
    )
    .chain(([w, d, f, format, start]) =>
      layoutArb(f).map(
        ({ frequency, ...layout }) => new CreateExport(w, d, frequency, format, start, layout),
      ),
    );
  const update = fc
    .tuple(
      exportRef,
      fc.oneof(
        fc.constantFrom(...EXPORT_FORMATS).map((format) => ({ format })),
        fc.constantFrom(...FREQUENCIES).map((frequency) => ({ frequency })),
        datasetsArb.map((datasets) => ({ datasets })),
        // A layout switch mid-run (`run_hour` only takes hourly and daily exports: others answer 400).
        fc.constantFrom<Layout>('date', 'run_hour').map((layout) => ({ layout })),
        fc
          .constantFrom(...RUN_HOUR_FREQUENCIES)
          .chain((f) => scheduleArb(f).map((schedule) => ({ schedule }))),
      ),
    )
    .map(([k, change]) => new Update(k, change));
  const tick = fc
    .tuple(
      fc.constantFrom(MINUTE_MS, 5 * MINUTE_MS, 15 * MINUTE_MS, HOUR_MS, 3 * HOUR_MS),
      fc.constantFrom<'tick' | 'midnight' | 'retention'>(
        'tick',
        'tick',
        'tick',
        'tick',
        'midnight',
        'retention',
      ),
      fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        {
          weight: 1,
          arbitrary: fc.constantFrom<keyof TickFaults>('budgetSpent', 'crashAfterUpload', 'bucketDown'),
        },
      ),
    )
    .map(([ms, kind, fault]) => new Tick(kind === 'tick' ? ms : ms / 60, kind, fault));
  const weighted = (weight: number, arbitrary: fc.Arbitrary<fc.AsyncCommand<Model, Real>>) => ({
    weight,
    arbitrary,
  });
  // The operations: one entry each (an operation added is one more entry).
  return [
    weighted(8, ingest),
    weighted(6, ingest2),
    weighted(2, imports),
    weighted(4, create),
    weighted(5, update),
    weighted(10, tick),
    weighted(
      2,
      fc.tuple(exportRef, fc.boolean()).map(([k, on]) => new SetEnabled(k, on)),
    ),
    weighted(
      1,
      exportRef.map((k) => new RunNow(k)),
    ),
    weighted(
      1,
      fc.tuple(exportRef, fc.boolean()).map(([k, revoke]) => new Credentials(k, revoke)),
    ),
    weighted(
      1,
      exportRef.map((k) => new Move(k)),
    ),
    weighted(
      1,
      exportRef.map((k) => new Delete(k)),
    ),
    weighted(
      4,
      fc
        .tuple(
          exportRef,
          fc.option(fc.integer({ min: 1, max: 80 }), { nil: undefined, freq: 3 }),
          fc.integer({ min: 1, max: 30 }),
        )
        .map(([k, ago, hours]) => new Backfill(k, ago, hours)),
    ),
    weighted(
      1,
      exportRef.map((k) => new Cancel(k)),
    ),
    weighted(1, fc.constant(new Compact())),
    weighted(
      1,
      fc
        .tuple(ws, fc.constantFrom<'subscriber' | 'email'>('subscriber', 'email'), fc.nat(50))
        .map(([w, by, pick]) => new Erase(w, by, pick)),
    ),
    weighted(
      1,
      exportRef.map((k) => new Flood(k)),
    ),
    weighted(
      4,
      fc.tuple(fc.nat(7), fc.integer({ min: 1, max: 40 })).map(([p, n]) => new IngestLive(p, n)),
    ),
    weighted(3, recipeArbitrary()),
    weighted(
      3,
      fc
        .tuple(exportRef, fc.constantFrom<OrganizeAction>('link', 'list', 'link', 'list', 'unlink', 'unlist'))
        .map(([k, action]) => new Organize(k, action)),
    ),
  ];
}

/** The schedule of a seed: `ops` operations. */
export function scheduleOf(seed: number, ops: number): fc.AsyncCommand<Model, Real>[] {
  const [schedule] = fc.sample(
    fc.array(fc.oneof(...commandArbitraries()), { minLength: ops, maxLength: ops }),
    {
      seed,
      numRuns: 1,
    },
  );
  return schedule!;
}

/** The virtual start of every schedule. */
export const SIM_EPOCH_MS = Date.UTC(2026, 2, 2, 9, 0, 0);

/** Runs one schedule in a fresh world, settles it, and checks the end rules. Throws on a failing violation. */
export async function runSchedule(
  commands: Iterable<fc.AsyncCommand<Model, Real>>,
  options: SimOptions & { seed: number },
  sink: (sim: Sim) => void = () => undefined,
): Promise<void> {
  setVirtualTime(SIM_EPOCH_MS);
  seedRandomBytes(options.seed);
  const world = await createWorld(WORKSPACES);
  const sim: Sim = {
    world,
    model: new Model(),
    history: new BucketHistory(),
    options,
    violations: [],
    eventSeed: 0,
    steps: 0,
    executed: [],
    delivered: 0,
    deliveredByDataset: new Map(),
    pendingReceipts: new Map(),
  };
  sink(sim);
  try {
    await fc.asyncModelRun(() => ({ model: sim.model, real: sim }), commands);
    delete sim.current;
    await settle(sim);
  } finally {
    await world.close();
  }
}

/** Faults off; the clock moves on in 15-minute ticks until every export and backfill has caught up, or the bound. */
async function settle(sim: Sim): Promise<void> {
  const pending = sim.model
    .liveExports()
    .filter((exp) => exp.enabled)
    .flatMap((exp) => exp.backfills).length;
  const bound = SETTLE_TICKS + 2 * pending;
  // The customer replaces the keys they revoked.
  for (const exp of sim.model.liveExports())
    if (sim.world.revoked.has(`${exp.prefix}/`)) await replaceKeys(sim, exp);
  let missing: Violation[] = [];
  const started = performance.now();
  let ticks = 0;
  for (; ticks < bound; ticks++) {
    advanceVirtualTime(SETTLE_TICK_MS);
    sim.model.markLapsed(virtualNow(), sim.world.retentionMs);
    await sim.world.dispatch();
    await checkSlots(sim, `settling tick ${ticks + 1}`);
    await checkAll(sim, `settling tick ${ticks + 1}`);
    sim.options.log?.(`${new Date(virtualNow()).toISOString()} settling tick ${ticks + 1}`);
    missing = await missingAll(sim);
    if (missing.length === 0) break;
  }
  sim.options.log?.(`settled in ${ticks + 1} ticks, ${Math.round(performance.now() - started)} ms`);
  const manifests: Violation[] = [];
  for (const exp of sim.model.exports) {
    const objects = await snapshotOf(sim, exp);
    // Manifests per location: each lists the window's files under its own prefix.
    for (const prefix of exp.prefixes)
      manifests.push(...checkManifests(exp, await snapshotOf(sim, exp, [prefix])));
    for (const [key, object] of objects) {
      sim.delivered += object.ids?.length ?? 0;
      const dataset = datasetOfKey(key);
      if (dataset !== undefined && object.ids !== undefined)
        sim.deliveredByDataset.set(dataset, (sim.deliveredByDataset.get(dataset) ?? 0) + object.ids.length);
    }
    if (exp.deleted) continue;
    const shown = (await api(sim, exp.workspace, 'GET', `/data-exports/${exp.id}`)).body.dataExport as
      | ShownTotals
      | undefined;
    if (shown !== undefined) {
      manifests.push(...checkTotals(sim.model, exp, objects, shown, virtualNow(), sim.world.retentionMs));
    }
  }
  report(sim, `settling (${bound} ticks at most)`, [...missing, ...manifests]);
}

async function missingAll(sim: Sim): Promise<Violation[]> {
  const violations: Violation[] = [];
  for (const exp of sim.model.liveExports()) {
    if (!exp.enabled) continue;
    const objects = await snapshotOf(sim, exp);
    const missing = missingRows(sim.model, exp, objects, virtualNow(), sim.world.retentionMs, () => false);
    for (const violation of missing) {
      if (violation.backfillId !== undefined) {
        const path = `/data-exports/${exp.id}/backfills/${violation.backfillId}`;
        const response = await api(sim, exp.workspace, 'GET', path);
        const backfill = response.body.backfill as Json | undefined;
        // A failed backfill is reported to the customer (its error): its rows are accounted for. So are the
        // windows of a dataset it reports as not backfilled (they lost rows before it reached them, and a
        // delivered file is never replaced by one with fewer rows).
        if (backfill?.status === 'failed') continue;
        const note = String(backfill?.error ?? '');
        if (note.includes('Not backfilled') && note.includes(`${violation.dataset} from`)) continue;
      }
      violations.push(violation);
    }
  }
  return violations;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function duration(ms: number): string {
  if (ms % DAY_MS === 0) return `${ms / DAY_MS} d`;
  if (ms % HOUR_MS === 0) return `${ms / HOUR_MS} h`;
  if (ms % MINUTE_MS === 0) return `${ms / MINUTE_MS} min`;
  return `${ms / 1000} s`;
}

/** The outcome of one seed. */
export interface SeedResult {
  seed: number;
  failed: boolean;
  /** The failing schedule after shrinking, one operation a line. */
  schedule?: string;
  /** fast-check's path of the shrunk counterexample (`SLUICE_SIM_PATH` replays it directly). */
  path?: string;
  error?: string;
  numShrinks: number;
  /** Every violation of the last run, tolerated ones included. */
  violations: (Violation & { step: string })[];
  ops: number;
  faults: Map<string, number>;
  /** Rows in the exports' files at the end, over every export, and by dataset. */
  delivered: number;
  deliveredByDataset: Map<EventDataset, number>;
}

/**
 * Runs the schedule of `seed` (opening with `options.recipe`'s if given); a failure is shrunk (fast-check's `subarray` of the schedule, keeping the order)
 * for at most `shrinkMs`, or replayed at `path` (the shrunk schedule a failure printed).
 */
export async function runSeed(
  seed: number,
  ops: number,
  options: SimOptions & { path?: string; shrinkMs?: number; recipe?: string },
): Promise<SeedResult> {
  // A replay's path is `<operations kept>:<fast-check's path>`.
  const [cut, fcPath] = options.path?.includes('/') ? options.path.split('/') : [undefined, options.path];
  // With a recipe: that recipe, then `ops - 1` generated operations.
  let schedule = options.recipe
    ? [...recipeSchedule(options.recipe, seed), ...scheduleOf(seed, ops - 1)]
    : scheduleOf(seed, ops);
  if (cut !== undefined) schedule = schedule.slice(0, Number(cut));
  let last: Sim | undefined;
  const keep = (sim: Sim) => {
    last = sim;
  };
  let error: Error | undefined;
  if (fcPath === undefined) {
    try {
      await runSchedule(schedule, { ...options, seed }, keep);
    } catch (thrown) {
      error = thrown as Error;
      // What came after the failing operation cannot have caused it: shrink the prefix only.
      const failedAt = last?.current ? schedule.indexOf(last.current) : -1;
      if (failedAt >= 0) schedule = schedule.slice(0, failedAt + 1);
    }
  }
  let result = last;
  let numShrinks = 0;
  if (fcPath !== undefined || (error !== undefined && (options.shrinkMs ?? 0) > 0)) {
    const started = performance.now();
    let failedSim: Sim | undefined;
    let replayed = false;
    const details = await fc.check(
      fc.asyncProperty(fc.subarray(schedule), async (commands) => {
        // The whole schedule is known to fail (unless replaying): not run twice.
        if (fcPath === undefined && commands.length === schedule.length) throw error;
        // A replay runs the schedule at the path only (fast-check would go on to the candidates after it).
        if (fcPath !== undefined && replayed) return true;
        replayed = true;
        // Out of shrinking time: this candidate counts as passing, so the smallest failure so far is kept.
        if (performance.now() - started > (options.shrinkMs ?? 0) && fcPath === undefined) return true;
        try {
          await runSchedule(commands, { ...options, seed }, keep);
          return true;
        } catch (thrown) {
          failedSim = last;
          throw thrown;
        }
      }),
      // A replay runs the printed schedule once and stops there (fast-check would otherwise go on shrinking).
      { seed, numRuns: 1, examples: [[schedule]], ...(fcPath ? { path: fcPath, endOnFailure: true } : {}) },
    );
    numShrinks = details.numShrinks;
    if (details.failed) {
      error = details.errorInstance as Error;
      result = failedSim ?? result;
      const path = details.counterexamplePath
        ? `${schedule.length}/${details.counterexamplePath}`
        : undefined;
      return summary(seed, result, error, numShrinks, path);
    }
    // A replay that passed, or a failure that did not recur: reported as it was.
    if (fcPath !== undefined) return summary(seed, last, undefined, 0, undefined);
  }
  return summary(seed, result, error, numShrinks, undefined);
}

function summary(
  seed: number,
  sim: Sim | undefined,
  error: Error | undefined,
  numShrinks: number,
  path: string | undefined,
): SeedResult {
  return {
    seed,
    failed: error !== undefined,
    ...(error && sim ? { schedule: sim.executed.join('\n') } : {}),
    ...(path ? { path } : {}),
    ...(error ? { error: error.message } : {}),
    numShrinks,
    violations: sim?.violations ?? [],
    ops: sim?.steps ?? 0,
    faults: sim?.model.faults ?? new Map(),
    delivered: sim?.delivered ?? 0,
    deliveredByDataset: sim?.deliveredByDataset ?? new Map(),
  };
}
