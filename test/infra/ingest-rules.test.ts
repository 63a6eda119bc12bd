import { NOTICE_DETAIL_TYPES, NOTICE_SOURCE } from '@sluice/engine';
import { INGEST_METRICS, INGEST_SERVICE, powertoolsIngestMetrics, workspaceSource } from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_AGE_ALARM_SECONDS } from '../../infra/constructs/observability.js';
import { matchesPattern, type SampleEntry } from './event-pattern.js';
import { logicalIdOf, show, type Synthesized, synthesize } from './helpers.js';

/**
 * Issue 23, item 1: no `sluice.` entry disappears in EventBridge, and nothing ingestion refuses, drops or
 * keeps waiting goes unalarmed. Sample entries are matched against the synthesized rule patterns of both
 * stacks (a `prod` stage with producer accounts).
 */
const ACCOUNT = '123456789012';
const PRODUCER = '222222222222';
let built: Synthesized;
type Rule = { id: string; pattern: Record<string, unknown>; targets: unknown };
let rules: Rule[];

beforeAll(() => {
  built = synthesize({ stage: 'prod', account: ACCOUNT, region: 'eu-west-1', producerAccounts: PRODUCER });
  rules = [built.statefulTemplate, built.statelessTemplate].flatMap((template) =>
    Object.entries(
      template.findResources('AWS::Events::Rule') as Record<
        string,
        { Properties: { EventPattern?: Record<string, unknown>; EventBusName?: unknown; Targets: unknown } }
      >,
    )
      .filter(
        ([, rule]) =>
          rule.Properties.EventPattern !== undefined && rule.Properties.EventBusName !== undefined,
      )
      .map(([id, rule]) => ({
        id,
        pattern: rule.Properties.EventPattern!,
        targets: rule.Properties.Targets,
      })),
  );
});

const entry = (source: string, detailType: string, account = ACCOUNT): SampleEntry => ({
  source,
  'detail-type': detailType,
  account,
});

/** A target that is the dead-letter queue itself (not a rule's dead-letter config). */
const DEAD_LETTERS_TARGET = /^\[\{"Arn":\{"Fn::GetAtt":\["IngestDeadLetters","Arn"\]\}/;

/** The rules an entry matches, by where they send it. */
function destinations(sample: SampleEntry): string[] {
  // The ingest rule's target is the buffer the ingest function reads.
  const ingestId = logicalIdOf(built.stateless.ingestBuffer);
  return rules
    .filter((rule) => matchesPattern(rule.pattern, sample))
    .map((rule) => {
      const targets = show(rule.targets);
      if (targets.includes(ingestId)) return 'ingest';
      if (DEAD_LETTERS_TARGET.test(targets)) return 'deadLetters';
      return `other: ${rule.id}`;
    })
    .sort();
}

describe('every sluice. entry on the bus is taken by exactly one rule', () => {
  it.each<[string, SampleEntry, string[]]>([
    ['events of a workspace', entry(workspaceSource('ws_1'), 'sluice.events'), ['ingest']],
    ['subscribers of a workspace', entry(workspaceSource('ws_1'), 'sluice.subscribers'), ['ingest']],
    ['a producer account', entry(workspaceSource('ws_1'), 'sluice.events', PRODUCER), ['ingest']],
    ['a misspelt detail-type', entry(workspaceSource('ws_1'), 'sluice.event'), ['deadLetters']],
    ['another detail-type under a sluice. source', entry('sluice.orders', 'order.placed'), ['deadLetters']],
    ['a source without the workspace prefix', entry('sluice.ws_1', 'sluice.events'), ['deadLetters']],
    ['an empty workspace', entry('sluice.workspace.', 'sluice.subscribers'), ['ingest']],
    ['ingest detail-types under any other source', entry('orders-service', 'sluice.events'), ['deadLetters']],
    [
      'an account the rule does not list',
      entry(workspaceSource('ws_1'), 'sluice.events', '999999999999'),
      ['deadLetters'],
    ],
    [
      'a notice detail-type under a workspace source',
      entry(workspaceSource('ws_1'), NOTICE_DETAIL_TYPES.failing),
      ['deadLetters'],
    ],
    [
      "Sluice's own notices (for platform consumers)",
      entry(NOTICE_SOURCE, NOTICE_DETAIL_TYPES.recovered),
      [],
    ],
    ['other traffic on the bus', entry('orders-service', 'order.placed'), []],
  ])('%s', (_name, sample, expected) => {
    expect(destinations(sample)).toEqual(expected);
  });

  it('sends the catch-all rules to the stateful stack’s dead-letter queue, in the stateful stack', () => {
    const catchAll = rules.filter((rule) => DEAD_LETTERS_TARGET.test(show(rule.targets)));
    expect(catchAll.map((rule) => rule.id).sort()).toEqual([
      'NonWorkspaceSourceRule',
      'NoticeTypeFromWorkspaceRule',
      'OtherDetailTypeRule',
      'UnlistedAccountRule',
    ]);
    for (const { id } of catchAll) expect(built.statefulTemplate.toJSON().Resources[id]).toBeDefined();
  });
});

type AlarmProps = {
  Threshold: number;
  ComparisonOperator: string;
  EvaluationPeriods: number;
  TreatMissingData: string;
  Namespace?: string;
  MetricName?: string;
  Statistic?: string;
  ExtendedStatistic?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Metrics?: {
    Expression?: string;
    MetricStat?: { Metric: { MetricName: string; Dimensions: { Name: string; Value: unknown }[] } };
  }[];
};

function alarm(name: string): AlarmProps {
  const construct = built.stateless.observability.alarms[name];
  if (!construct) throw new Error(`no alarm ${name}`);
  return (built.statelessTemplate.toJSON().Resources[logicalIdOf(construct)] as { Properties: AlarmProps })
    .Properties;
}

/** The dimensions (name to value) of the EMF documents ingestion writes for one bus event. */
function publishedDimensionSets(): Record<string, string[][]> {
  const lines: string[] = [];
  powertoolsIngestMetrics((line) => lines.push(line), { stage: 'prod' }).busEvent?.({
    workspaceId: 'ws_1',
    lagMs: 1000,
    rejectedRows: 1,
    rejectedEnvelopes: 1,
    dropped: { test: 1, history: 1, late: 1 },
  });
  const sets: Record<string, string[][]> = {};
  for (const line of lines) {
    const document = JSON.parse(line) as {
      _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    };
    for (const directive of document._aws.CloudWatchMetrics) {
      for (const metric of directive.Metrics)
        sets[metric.Name] = directive.Dimensions.map((set) => [...set].sort());
    }
  }
  return sets;
}

describe('ingest alarms', () => {
  it('alarms on the oldest dead letter after 3 days, well before the queue’s 14-day retention', () => {
    const props = alarm('IngestDeadLetterAge');
    expect(props).toMatchObject({
      MetricName: 'ApproximateAgeOfOldestMessage',
      Namespace: 'AWS/SQS',
      Statistic: 'Maximum',
    });
    expect(props.Threshold).toBe(DEAD_LETTER_AGE_ALARM_SECONDS);
    expect(DEAD_LETTER_AGE_ALARM_SECONDS).toBeLessThanOrEqual((14 * 86_400) / 2);
    expect(show(props.Dimensions)).toContain('IngestDeadLetters');
  });

  it('alarms on throttles of the ingest function and on the age of its queued async events', () => {
    const ingestId = logicalIdOf(built.stateless.functions.ingest);
    expect(alarm('IngestThrottles')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Throttles',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: ingestId } }],
    });
    expect(alarm('IngestAsyncEventAge')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'AsyncEventAge',
      Statistic: 'Maximum',
      Threshold: 15 * 60 * 1000,
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: ingestId } }],
    });
  });

  it('alarms on the ingest lag ingestion publishes (now minus when the producer sent), under the dimensions it publishes', () => {
    const props = alarm('IngestLag');
    expect(props).toMatchObject({
      Namespace: 'Sluice',
      MetricName: INGEST_METRICS.lag,
      ExtendedStatistic: 'p90',
      Threshold: 900,
    });
    const dims = Object.fromEntries((props.Dimensions ?? []).map((d) => [d.Name, d.Value]));
    expect(dims).toEqual({ service: INGEST_SERVICE, Stage: 'prod' });
    expect(publishedDimensionSets()[INGEST_METRICS.lag]).toContainEqual(Object.keys(dims).sort());
  });

  it('alarms on rejected rows and envelopes over all workspaces, published per workspace too', () => {
    const props = alarm('RejectedEvents');
    const read = (props.Metrics ?? []).flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []));
    expect(read.map((m) => m.MetricName).sort()).toEqual([
      INGEST_METRICS.rejectedEnvelopes,
      INGEST_METRICS.rejectedRows,
    ]);
    expect(props.Threshold).toBe(10);
    const published = publishedDimensionSets();
    for (const metric of read) {
      const dims = Object.fromEntries(metric.Dimensions.map((d) => [d.Name, d.Value]));
      expect(dims).toEqual({ service: INGEST_SERVICE, Stage: 'prod' });
      expect(published[metric.MetricName]).toEqual([
        ['Stage', 'Workspace', 'service'],
        ['Stage', 'service'],
      ]);
    }
    for (const dropped of [
      INGEST_METRICS.droppedLate,
      INGEST_METRICS.droppedTest,
      INGEST_METRICS.droppedHistory,
    ]) {
      expect(published[dropped]).toContainEqual(['Stage', 'Workspace', 'service']);
    }
  });
});
