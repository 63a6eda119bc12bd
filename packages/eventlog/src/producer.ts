/**
 * For producers: events of one workspace as PutEvents entries for the Sluice bus, each within EventBridge's
 * 256 KB entry limit. Send them 10 entries per `PutEvents` call (docs/deploy.md has the whole producer, with
 * its IAM policy). No SDK import here: the entries are plain `PutEventsRequestEntry` objects.
 */
import { EVENTS_DETAIL_TYPE, MAX_BUS_ENTRY_BYTES, workspaceSource } from './bus.js';

/** One PutEvents entry (the fields of the SDK's `PutEventsRequestEntry` that Sluice uses). */
export interface BusEntry {
  EventBusName: string;
  Source: string;
  DetailType: string;
  Detail: string;
}

/** EventBridge counts 14 bytes for an entry's `Time`, whether given or not (its size calculation). */
const TIME_BYTES = 14;

/**
 * Packs `events` of `workspaceId` into as few `sluice.events` entries as fit in `maxBytes` each, in order.
 * The size is EventBridge's: the UTF-8 bytes of Source, DetailType and Detail plus 14 for Time.
 *
 * @param eventBus the bus name or ARN (the `EventBusArn` output; an ARN is needed across accounts)
 * @throws Error naming the event that alone does not fit in one entry
 */
export function busEntries(
  eventBus: string,
  workspaceId: string,
  events: readonly unknown[],
  maxBytes: number = MAX_BUS_ENTRY_BYTES,
): BusEntry[] {
  const Source = workspaceSource(workspaceId);
  const emptyDetail = JSON.stringify({ workspaceId, events: [] });
  const fixed = Buffer.byteLength(Source) + Buffer.byteLength(EVENTS_DETAIL_TYPE) + TIME_BYTES;
  const entries: BusEntry[] = [];
  let batch: string[] = [];
  let size = fixed + Buffer.byteLength(emptyDetail);
  const flush = () => {
    if (batch.length === 0) return;
    const Detail = `${emptyDetail.slice(0, -2)}${batch.join(',')}]}`;
    entries.push({ EventBusName: eventBus, Source, DetailType: EVENTS_DETAIL_TYPE, Detail });
    batch = [];
    size = fixed + Buffer.byteLength(emptyDetail);
  };
  events.forEach((event, index) => {
    const json = JSON.stringify(event);
    const bytes = Buffer.byteLength(json) + (batch.length > 0 ? 1 : 0);
    if (size + bytes > maxBytes) flush();
    const alone = fixed + Buffer.byteLength(emptyDetail) + Buffer.byteLength(json);
    if (alone > maxBytes) {
      throw new Error(`event ${index} is ${alone} bytes in an entry, over the ${maxBytes}-byte limit`);
    }
    size += Buffer.byteLength(json) + (batch.length > 0 ? 1 : 0);
    batch.push(json);
  });
  flush();
  return entries;
}
