import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { DestinationNotice } from '@sluice/core';

/**
 * The events Sluice puts on its own bus when a destination starts failing for a customer-caused reason and
 * when it recovers (docs/deploy.md, "Destination failing and recovered events"). Their source is not a
 * workspace source, so the ingest rule never takes them and producer accounts may not put them.
 */

/** The `source` of Sluice's destination events. */
export const NOTICE_SOURCE = 'sluice.data-exports';

/** The `detail-type` of each notice kind. */
export const NOTICE_DETAIL_TYPES: Record<DestinationNotice['kind'], string> = {
  failing: 'sluice.data-export.failing',
  recovered: 'sluice.data-export.recovered',
};

/**
 * The `detail` of a destination event: the notice's ids, reason code and times, its id as `noticeId` and the
 * state the destination is in now; the message is the one `lastError` shows (never a secret).
 */
export type NoticeDetail = Omit<DestinationNotice, 'id' | 'kind'> & {
  noticeId: string;
  state: 'failing' | 'healthy';
};

/** The PutEvents entry of a notice (the fields of the SDK's `PutEventsRequestEntry` that Sluice sets). */
export function noticeEntry(
  eventBusName: string,
  notice: DestinationNotice,
): { EventBusName: string; Source: string; DetailType: string; Detail: string; Time: Date } {
  const detail: NoticeDetail = {
    noticeId: notice.id,
    state: notice.kind === 'failing' ? 'failing' : 'healthy',
    workspaceId: notice.workspaceId,
    destinationId: notice.destinationId,
    reason: notice.reason,
    message: notice.message,
    failingSince: notice.failingSince,
    occurredAt: notice.occurredAt,
  };
  return {
    EventBusName: eventBusName,
    Source: NOTICE_SOURCE,
    DetailType: NOTICE_DETAIL_TYPES[notice.kind],
    Detail: JSON.stringify(detail),
    Time: new Date(notice.occurredAt),
  };
}

/** Where notices go. `publish` throws when the notice was not accepted. */
export interface NoticePublisher {
  publish(notice: DestinationNotice): Promise<void>;
}

/** Options of {@link EventBridgeNoticePublisher}. */
export interface EventBridgeNoticePublisherOptions {
  /** The Sluice bus (`SLUICE_EVENT_BUS_NAME`). */
  eventBusName: string;
  /** @default one client per process, from the environment (`AWS_ENDPOINT_URL_EVENTBRIDGE` locally) */
  client?: EventBridgeClient;
}

let sharedClient: EventBridgeClient | undefined;

/** One EventBridge client per process, configured from the environment, built on first use. */
function defaultClient(): EventBridgeClient {
  sharedClient ??= new EventBridgeClient({});
  return sharedClient;
}

/** Publishes notices with EventBridge `PutEvents`, one entry per notice. */
export class EventBridgeNoticePublisher implements NoticePublisher {
  private readonly client: EventBridgeClient;
  private readonly eventBusName: string;

  constructor(options: EventBridgeNoticePublisherOptions) {
    this.client = options.client ?? defaultClient();
    this.eventBusName = options.eventBusName;
  }

  async publish(notice: DestinationNotice): Promise<void> {
    const result = await this.client.send(
      new PutEventsCommand({ Entries: [noticeEntry(this.eventBusName, notice)] }),
    );
    const failed = result.FailedEntryCount ?? 0;
    if (failed > 0) {
      const entry = result.Entries?.[0];
      throw new Error(
        `PutEvents refused the notice: ${entry?.ErrorCode ?? 'unknown'} ${entry?.ErrorMessage ?? ''}`.trim(),
      );
    }
  }
}
