import { ArchiveBucket, ArchivedEventSource, createArchiveClient } from '@sluice/archive';
import { ArchiveCursorStore } from '@sluice/control';
import { EventLogReader } from '@sluice/eventlog';
import type { EventSourceConfig } from './env.js';

/**
 * The event source of the writer and dispatch: the hot event log, and the event archive for the hours the hot
 * log no longer holds whole. `localS3Endpoint` (the local runtime only) points the archive client at s3rver.
 */
export function archivedEventSource(
  config: EventSourceConfig,
  localS3Endpoint?: string,
): ArchivedEventSource {
  const hot = new EventLogReader({
    eventsTable: config.eventsTable,
    subscribersTable: config.subscribersTable,
  });
  return new ArchivedEventSource({
    hot,
    archive: new ArchiveBucket({
      bucket: config.archiveBucket,
      client: createArchiveClient(localS3Endpoint !== undefined ? { localEndpoint: localS3Endpoint } : {}),
    }),
    coverage: new ArchiveCursorStore({ tableName: config.controlTable }),
    hotRetentionMs: config.eventRetentionMs,
  });
}
