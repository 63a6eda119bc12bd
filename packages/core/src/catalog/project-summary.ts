/**
 * `project_summary`: one row per project, exported once, in the window in which it is recorded complete
 * (reference 004; `once`: the stateful ingest belongs to the messages module).
 */
import { z } from 'zod';
import type { ColumnSpec } from './columns.js';
import { MESSAGE_PROTOCOLS } from './message-events.js';
import { hex, pick, type Random } from './random.js';
import { iso, type SampleWorld } from './sample-world.js';
import { secondProductDataset } from './second-product.js';
import type { SampleRow } from './types.js';

const SPECS = [
  ['project_id', 'string', false, 'Project id'],
  ['campaign_id', 'string', true, 'Campaign id'],
  ['name', 'string', false, 'Project name'],
  ['type', 'string', true, 'Project type'],
  ['protocol', 'string', true, '`sms`, `mms` or `rcs`', z.enum(MESSAGE_PROTOCOLS)],
  ['channel', 'string', true, 'Channel'],
  ['status', 'string', true, 'Project status'],
  ['total_recipients', 'int32', true, 'Audience size'],
  ['messages_sent', 'int32', true, 'Messages sent'],
  ['messages_delivered', 'int32', true, 'Messages delivered'],
  ['messages_failed', 'int32', true, 'Messages failed'],
  ['scheduled_at', 'timestamp_millis_utc', true, 'Scheduled start'],
  ['sent_at', 'timestamp_millis_utc', true, 'First send'],
  ['completed_at', 'timestamp_millis_utc', true, 'Completion time'],
  ['organization_id', 'string', false, 'Owning organization'],
  ['brand_id', 'string', true, 'Brand'],
  ['created_at', 'timestamp_millis_utc', true, 'Project creation time'],
] as const satisfies readonly ColumnSpec[];

/** The columns of a `project_summary` row (normalized). */
export interface ProjectSummaryColumns extends Record<string, unknown> {
  project_id: string;
  campaign_id: string | null;
  name: string;
  type: string | null;
  protocol: (typeof MESSAGE_PROTOCOLS)[number] | null;
  channel: string | null;
  status: string | null;
  total_recipients: number | null;
  messages_sent: number | null;
  messages_delivered: number | null;
  messages_failed: number | null;
  scheduled_at: string | null;
  sent_at: string | null;
  completed_at: string | null;
  organization_id: string;
  brand_id: string | null;
  created_at: string | null;
}

export const projectSummary = secondProductDataset<'project_summary', ProjectSummaryColumns>({
  name: 'project_summary',
  semantics: 'once',
  summary:
    'One row per project, written in the window in which Sluice records it complete (`completed_at` set). ' +
    'Drafts, scheduled and in-progress projects are not exported until they complete.',
  specs: SPECS,
  idField: 'project_id',
  erasure: {},
});
export type ProjectSummaryRow = z.output<typeof projectSummary.schema>;

/**
 * A sample `project_summary` row of a new project completing at `timeMs`, modelled on one of the world's:
 * scheduled, sent, and its delivery figures.
 */
export function sampleProjectSummary(world: SampleWorld, random: Random, timeMs: number): SampleRow {
  const project = pick(random, world.projects);
  const sentMs = timeMs - 600_000 - Math.floor(random() * 6 * 3_600_000);
  const scheduledMs = sentMs - Math.floor(random() * 2 * 86_400_000);
  const sent = Math.floor(project.total_recipients * (0.9 + random() * 0.1));
  const failed = Math.floor(sent * random() * 0.08);
  return {
    atMs: timeMs,
    row: {
      project_id: `prj_${hex(random, 12)}`,
      campaign_id: project.campaign_id,
      name: project.name,
      type: project.type,
      protocol: project.protocol,
      channel: project.channel,
      status: 'completed',
      total_recipients: project.total_recipients,
      messages_sent: sent,
      messages_delivered: sent - failed,
      messages_failed: failed,
      scheduled_at: iso(scheduledMs),
      sent_at: iso(sentMs),
      completed_at: iso(timeMs),
      brand_id: project.brand_id,
      created_at: iso(scheduledMs - Math.floor(random() * 7 * 86_400_000)),
    },
  };
}
