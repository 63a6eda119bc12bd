/**
 * `erase --workspace <id> (--subscriber <id> | --email <address> | --phone <number> | --contact <id> | --all)
 * [--json]`: deletes a person's rows (by subscriber id or e-mail; for the second product's datasets by phone
 * number or contact id) or all of a workspace's rows from the hot event log, the subscribers table,
 * the event archive and the rejected events (`@sluice/archive` `Eraser`), and prints what it removed. Files already delivered to
 * customers' buckets are theirs and are not touched. docs/deploy.md, "Erasure".
 */
import { DAY_MS } from '@sluice/core';
import {
  ArchiveBucket,
  createArchiveClient,
  type ErasureReport,
  type ErasureTarget,
  Eraser,
} from '@sluice/archive';
import { ErasureLogStore } from '@sluice/control';
import { DynamoRejectedEvents } from '@sluice/eventlog';
import { loadRuntimeConfig, type RuntimeConfig } from '@sluice/local/runtime-config';
import { operatorTables } from './tables.js';
import { Command } from 'commander';
import { UsageError } from '../context.js';

/** What the erase command needs, injectable for tests. */
export interface EraseCommandDeps {
  /** @default a line on stdout */
  out?: (line: string) => void;
  /** The Sluice to operate on. @default {@link loadRuntimeConfig} when the command runs */
  config?: () => RuntimeConfig;
}

/** The erasure target of the options: exactly one of `--subscriber`, `--email`, `--phone`, `--contact`, `--all`. */
export function erasureTargetOf(values: {
  subscriber?: string;
  email?: string;
  phone?: string;
  contact?: string;
  all?: boolean;
}): ErasureTarget {
  const given = [
    values.subscriber !== undefined,
    values.email !== undefined,
    values.phone !== undefined,
    values.contact !== undefined,
    values.all === true,
  ].filter(Boolean);
  if (given.length !== 1)
    throw new UsageError('Give exactly one of --subscriber, --email, --phone, --contact or --all');
  if (values.subscriber !== undefined) return { kind: 'subscriber', subscriberId: values.subscriber };
  if (values.email !== undefined) return { kind: 'email', email: values.email };
  if (values.phone !== undefined) return { kind: 'phone', phone: values.phone };
  if (values.contact !== undefined) return { kind: 'contact', contactId: values.contact };
  return { kind: 'all' };
}

/** Whom an erasure target names, for the report. */
function targetName(target: ErasureTarget): string {
  switch (target.kind) {
    case 'all':
      return 'every row';
    case 'subscriber':
      return `subscriber ${target.subscriberId}`;
    case 'email':
      return `e-mail ${target.email}`;
    case 'phone':
      return `phone ${target.phone}`;
    case 'contact':
      return `contact ${target.contactId}`;
  }
}

/** The report as lines a person reads. */
export function formatErasure(report: ErasureReport): string[] {
  const who = targetName(report.target);
  return [
    `Erased ${who} of workspace ${report.workspaceId}:`,
    `  event log: ${report.hotRows} rows deleted`,
    `  subscribers table: ${report.subscribers} items deleted`,
    `  current rows (messages, projects): ${report.currentRows} deleted`,
    `  archive: ${report.archiveRows} rows removed; ${report.archiveObjectsRewritten} objects rewritten, ` +
      `${report.archiveObjectsDeleted} deleted (of ${report.archiveObjectsRead} read); ` +
      `${report.archiveVersionsDeleted} object versions removed`,
    `  rejected events: ${report.rejectedRows} rows removed; ${report.rejectedRewritten} rewritten, ` +
      `${report.rejectedDeleted} deleted`,
    'Files already delivered to customers are not touched.',
  ];
}

/** The erase command. */
export function createEraseCommands(deps: EraseCommandDeps = {}): Command[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const erase = new Command('erase')
    .option('--workspace <id>', 'the workspace')
    .option('--subscriber <id>', "a subscriber's rows")
    .option('--email <address>', "an e-mail address's rows")
    .option('--phone <number>', "a phone number's rows (the second product's datasets)")
    .option('--contact <id>', "a contact's rows (the second product's datasets)")
    .option('--all', "all of the workspace's rows")
    .option('--json', 'print the report as JSON')
    .action(
      async (values: {
        workspace?: string;
        subscriber?: string;
        email?: string;
        phone?: string;
        contact?: string;
        all?: boolean;
        json?: boolean;
      }) => {
        if (values.workspace === undefined || values.workspace === '')
          throw new UsageError('--workspace is required');
        const target = erasureTargetOf(values);
        const config = (deps.config ?? loadRuntimeConfig)();
        const tables = operatorTables(config);
        const bucket = config.archiveBucket;
        if (!bucket) throw new Error('SLUICE_ARCHIVE_BUCKET is not set (the stack output ArchiveBucketName)');
        const retentionDays = Number(config.eventRetentionDays || 35);
        if (!(retentionDays > 0))
          throw new Error('SLUICE_EVENT_RETENTION_DAYS must be a positive number of days');
        const client = tables.events.client;
        const s3 = createArchiveClient(
          config.localS3Endpoint ? { localEndpoint: config.localS3Endpoint } : {},
        );
        try {
          const report = await new Eraser({
            ...tables.events,
            archive: new ArchiveBucket({ bucket, client: s3 }),
            erasureLog: new ErasureLogStore(tables.control),
            rejected: new DynamoRejectedEvents({ tableName: tables.control.tableName, client }),
            hotRetentionMs: retentionDays * DAY_MS,
          }).erase(values.workspace, target);
          if (values.json) out(JSON.stringify(report));
          else for (const line of formatErasure(report)) out(line);
        } finally {
          client.destroy();
          s3.destroy();
        }
      },
    );
  return [erase];
}
