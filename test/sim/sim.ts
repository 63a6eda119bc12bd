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
  type Frequency,
  isEventDataset,
} from '@sluice/core';
import { generateEvents } from '@sluice/eventlog';
import fc from 'fast-check';
import { advanceVirtualTime, setVirtualTime, virtualNow } from './clock.js';
import { Model, type ModelExport, personOf } from './model.js';
import { seedRandomBytes } from './random.js';
import {
  BucketHistory,
  type Check,
  checkManifests,
  checkStep,
  checkTotals,
  type ShownTotals,
  missingRows,
  type Violation,
} from './oracle.js';
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
  /** The operation running or last run; undefined once the schedule settles. */
  current?: Op;
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
    const objects = await sim.world.bucket.snapshot(`${exp.prefix}/`);
    violations.push(...checkStep(sim.model, exp, objects, sim.history, virtualNow()));
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
    return live[this.k % live.length]!;
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

/** Events through the bus (recorded at the ingest's clock). */
class Ingest extends Op {
  constructor(
    readonly workspace: number,
    readonly count: number,
    readonly dataset: EventDataset,
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
    const result = await ws.ingest.ingestEvents(ws.id, events);
    if (result.accepted !== events.length)
      throw new Error(`ingest accepted ${result.accepted} of ${events.length}`);
    for (const event of events) {
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
    return `ingest(ws${this.workspace}, ${this.count} ${this.dataset})`;
  }
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

class CreateExport extends Op {
  constructor(
    readonly workspace: number,
    readonly datasets: EventDataset[],
    readonly frequency: Frequency,
    readonly format: ExportFormat,
    /** `startFrom` this far back; undefined: none (the creation time). */
    readonly startAgoMs: number | undefined,
  ) {
    super();
  }
  async apply(sim: Sim): Promise<void> {
    advanceVirtualTime(1_000);
    const now = virtualNow();
    const ref = sim.model.exports.length;
    const prefix = `sim-${sim.world.runId}/e${ref}`;
    const startMs = this.startAgoMs === undefined ? now : now - this.startAgoMs;
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
      ...(this.startAgoMs === undefined ? {} : { startFrom: new Date(startMs).toISOString() }),
    });
    if (response.status !== 201) throw new Error(`create answered ${response.status}: ${response.text}`);
    const id = String((response.body.dataExport as Json).id);
    sim.model.exports.push({
      ref,
      workspace: this.workspace,
      id,
      prefix,
      createdMs: now,
      startMs,
      frequency: this.frequency,
      frequencies: new Set([this.frequency]),
      formats: [{ sinceMs: now, format: this.format }],
      memberships: new Map(this.datasets.map((d) => [d, [{ addedMs: startMs }]])),
      enabled: true,
      deleted: false,
      backfills: [],
    });
  }
  toString() {
    const start = this.startAgoMs === undefined ? 'now' : `${duration(this.startAgoMs)} ago`;
    return `create(ws${this.workspace}, [${this.datasets.join(',')}], ${this.frequency}, ${this.format}, start ${start})`;
  }
}

class Update extends ExportOp {
  constructor(
    k: number,
    readonly change: { format: ExportFormat } | { frequency: Frequency } | { datasets: EventDataset[] },
  ) {
    super(k);
  }
  async on(sim: Sim, exp: ModelExport): Promise<void> {
    const response = await api(sim, exp.workspace, 'PATCH', `/data-exports/${exp.id}`, this.change);
    if (response.status !== 200) return;
    const now = virtualNow();
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
    sim.model.markLapsed(virtualNow(), sim.world.retentionMs);
    if (this.fault) {
      sim.world.faults[this.fault] = true;
      sim.model.countFault(this.fault);
    }
    try {
      await sim.world.dispatch();
    } finally {
      for (const key of Object.keys(sim.world.faults)) delete sim.world.faults[key as keyof TickFaults];
    }
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

// ---------------------------------------------------------------------------------------------------------
// The schedule

// The simulation's rows come from `generateEvents`: the first product's event datasets.
const datasetArb = fc.constantFrom(...FIRST_PRODUCT_EVENT_DATASETS);
const datasetsArb = fc.subarray([...FIRST_PRODUCT_EVENT_DATASETS], { minLength: 1 });
const exportRef = fc.nat(7);

/** The operations and their weights. */
export function commandArbitraries(): fc.WeightedArbitrary<fc.AsyncCommand<Model, Real>>[] {
  const ws = fc.nat(WORKSPACES - 1);
  const ingest = fc
    .tuple(ws, fc.integer({ min: 1, max: 80 }), datasetArb)
    .map(([w, n, d]) => new Ingest(w, n, d));
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
    .map(([w, d, f, format, start]) => new CreateExport(w, d, f, format, start));
  const update = fc
    .tuple(
      exportRef,
      fc.oneof(
        fc.constantFrom(...EXPORT_FORMATS).map((format) => ({ format })),
        fc.constantFrom(...FREQUENCIES).map((frequency) => ({ frequency })),
        datasetsArb.map((datasets) => ({ datasets })),
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
  return [
    weighted(8, ingest),
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
  let missing: Violation[] = [];
  const started = performance.now();
  let ticks = 0;
  for (; ticks < bound; ticks++) {
    advanceVirtualTime(SETTLE_TICK_MS);
    sim.model.markLapsed(virtualNow(), sim.world.retentionMs);
    await sim.world.dispatch();
    await checkAll(sim, `settling tick ${ticks + 1}`);
    sim.options.log?.(`${new Date(virtualNow()).toISOString()} settling tick ${ticks + 1}`);
    missing = await missingAll(sim);
    if (missing.length === 0) break;
  }
  sim.options.log?.(`settled in ${ticks + 1} ticks, ${Math.round(performance.now() - started)} ms`);
  const manifests: Violation[] = [];
  for (const exp of sim.model.exports) {
    const objects = await sim.world.bucket.snapshot(`${exp.prefix}/`);
    manifests.push(...checkManifests(exp, objects));
    for (const object of objects.values()) sim.delivered += object.ids?.length ?? 0;
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
    const objects = await sim.world.bucket.snapshot(`${exp.prefix}/`);
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
  /** Rows in the exports' files at the end, over every export. */
  delivered: number;
}

/**
 * Runs the schedule of `seed`; a failure is shrunk (fast-check's `subarray` of the schedule, keeping the order)
 * for at most `shrinkMs`, or replayed at `path` (the shrunk schedule a failure printed).
 */
export async function runSeed(
  seed: number,
  ops: number,
  options: SimOptions & { path?: string; shrinkMs?: number },
): Promise<SeedResult> {
  // A replay's path is `<operations kept>:<fast-check's path>`.
  const [cut, fcPath] = options.path?.includes('/') ? options.path.split('/') : [undefined, options.path];
  let schedule = scheduleOf(seed, ops);
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
    const details = await fc.check(
      fc.asyncProperty(fc.subarray(schedule), async (commands) => {
        // The whole schedule is known to fail (unless replaying): not run twice.
        if (fcPath === undefined && commands.length === schedule.length) throw error;
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
      { seed, numRuns: 1, examples: [[schedule]], ...(fcPath ? { path: fcPath } : {}) },
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
  };
}
