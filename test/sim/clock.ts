/**
 * The simulation's virtual clock. `Date` is replaced process-wide (construction without arguments and
 * `Date.now()` give the virtual time), so every `now` of the engine, the API, ingest, the archive and the state
 * machines' `$$.Execution.StartTime` is the simulation's. The time moves only when the simulation moves it;
 * nothing sleeps. Timers (`setTimeout`) stay real: the local services and the SDKs need them.
 */
const RealDate = Date;
let virtualMs: number | undefined;

class VirtualDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(virtualMs ?? RealDate.now());
    else super(...(args as [string | number | Date]));
  }
  static override now(): number {
    return virtualMs ?? RealDate.now();
  }
}

/** Installs the virtual clock at `ms` (idempotent: a second call only sets the time). */
export function setVirtualTime(ms: number): void {
  if (!Number.isFinite(ms)) throw new RangeError(`not a time: ${ms}`);
  virtualMs = ms;
  if (globalThis.Date !== (VirtualDate as unknown as DateConstructor)) {
    globalThis.Date = VirtualDate as unknown as DateConstructor;
  }
}

/** The virtual time (epoch ms). */
export function virtualNow(): number {
  if (virtualMs === undefined) throw new Error('the virtual clock is not installed');
  return virtualMs;
}

/** Moves the virtual time forward by `ms` (never back). */
export function advanceVirtualTime(ms: number): number {
  if (ms < 0) throw new RangeError('the virtual clock never goes back');
  setVirtualTime(virtualNow() + ms);
  return virtualNow();
}

/** Gives `Date` back. */
export function uninstallVirtualClock(): void {
  virtualMs = undefined;
  globalThis.Date = RealDate;
}
