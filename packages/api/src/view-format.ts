/**
 * Words and numbers of the API's views as people read them, shared by the CLI's output and the web console
 * (a subpath of its own, `@sluice/api/view-format`, so the console's bundle takes these and nothing else).
 */
import type { DataExportView } from './view.js';

/** `1,234,567` */
export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/**
 * `512 B`, `88.1 KiB`, `1.2 GiB`: powers of 1024 with their own names, the unit `npm start`'s run lines and the
 * bucket errors use too.
 */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** `active`, `paused`, `running`, `failed (3 in a row)`. */
export function exportState(
  view: Pick<DataExportView, 'isEnabled' | 'status' | 'consecutiveFailures'>,
): string {
  if (!view.isEnabled) return 'paused';
  if (view.status === 'failed') return `failed (${view.consecutiveFailures} in a row)`;
  return view.status === 'idle' ? 'active' : view.status;
}
