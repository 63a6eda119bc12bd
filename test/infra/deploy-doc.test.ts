import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createLogger } from '@sluice/core';
import { BUCKET_ERROR_NAMES } from '@sluice/sinks';
import { EventLogWriter, ingestBusEvent, workspaceSource } from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_NAMES } from '../../infra/settings.js';
import { eventTables } from '../helpers/tables.js';
import { matchesPattern } from './event-pattern.js';
import { logicalIdOf, show, type Synthesized, synthesize } from './helpers.js';

/**
 * docs/deploy.md is what a platform team follows before its first export (issue 28): its walk-through is
 * checked in order, its producer example against the synthesized ingest rule and the ingest itself, and the
 * facts it states against the code and the templates.
 */
const DOC = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
const ACCOUNT = '123456789012';

let built: Synthesized;
beforeAll(() => {
  built = synthesize({ stage: 'prod', account: ACCOUNT, region: 'eu-west-1' });
});

/** The text of a `##`/`###` section, up to the next heading of the same or a higher level. */
function section(heading: string): string {
  const start = DOC.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no section ${heading}`);
  const level = heading.split(' ')[0]!;
  const rest = DOC.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\\n#{2,${level.length}} `));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The producer example of the walk-through: the entry `aws events put-events` sends. */
function producerExample(): { source: string; detailType: string; detail: Record<string, unknown> } {
  const text = section('### 5. Events, then files');
  const script = /```sh\n([\s\S]*?)```/.exec(text)?.[1] ?? '';
  const detailText = /detail='([\s\S]*?)'\n/.exec(script)?.[1];
  const source = /Source: "([^"]+)"/.exec(script)?.[1];
  const detailType = /DetailType: "([^"]+)"/.exec(script)?.[1];
  if (detailText === undefined || source === undefined || detailType === undefined) {
    throw new Error('no producer example in "5. Events, then files"');
  }
  // The shell splices `$now` into the single-quoted JSON: '...'$now'...'.
  const detail = JSON.parse(detailText.replaceAll(`'$now'`, `${new Date().toISOString().slice(0, 19)}Z`));
  expect(script).toContain('--arg bus "$bus"');
  return { source, detailType, detail };
}

describe('docs/deploy.md: the walk-through', () => {
  it('numbers its steps in order, stack outputs first, the export before the events, no unnumbered duplicate', () => {
    // Act
    const walk = section('## From a fresh deploy to a first export');
    const headings = [...walk.matchAll(/^### (.+)$/gm)].map((match) => match[1]);

    // Assess
    expect(headings).toEqual([
      '1. The stack outputs and the CLI',
      '2. The first workspace and API key',
      '3. A test bucket and its key',
      '4. The first export',
      '5. Events, then files',
    ]);
    expect(DOC.match(/^### .*first export/gim)).toHaveLength(1);
    // Every `out` names its stack, and each output it reads is one of that stack's.
    const reads = [...walk.matchAll(/\$\(out (\$\w+) (\w+)\)/g)].map((m) => [m[1], m[2]]);
    expect(walk).not.toMatch(/\$\(out \w+\)/);
    const outputs = {
      $stateful: Object.keys(built.statefulTemplate.toJSON().Outputs ?? {}),
      $stateless: Object.keys(built.statelessTemplate.toJSON().Outputs ?? {}),
    };
    expect(reads.length).toBeGreaterThanOrEqual(7);
    for (const [stack, output] of reads) {
      expect(outputs[stack as keyof typeof outputs], `${stack} ${output}`).toContain(output);
    }
  });

  it("puts the producer example's event under a source and detail-type the synthesized ingest rule takes", () => {
    // Prepare
    const example = producerExample();
    // The ingest rule's target: the buffer the ingest function reads.
    const ingestId = logicalIdOf(built.stateless.ingestBuffer);
    const rules = Object.values(
      built.statelessTemplate.findResources('AWS::Events::Rule') as Record<
        string,
        { Properties: { EventPattern?: Record<string, unknown>; Targets: unknown } }
      >,
    ).filter((rule) => rule.Properties.EventPattern && show(rule.Properties.Targets).includes(ingestId));

    // Act
    const taken = rules.filter((rule) =>
      matchesPattern(rule.Properties.EventPattern!, {
        source: example.source,
        'detail-type': example.detailType,
        account: ACCOUNT,
      }),
    );

    // Assess
    expect(rules.length).toBeGreaterThan(0);
    expect(taken).toHaveLength(1);
    expect(example.source).toBe(workspaceSource(example.detail.workspaceId as string));
  });

  it("has the ingest accept the producer example's detail: every row written, none refused", async () => {
    // Prepare: the example's workspace renamed to a fresh one (tests never share a workspace)
    const example = producerExample();
    const workspaceId = `ws_${randomUUID()}`;
    const detail = { ...example.detail, workspaceId };
    const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'ignore' });

    // Act
    const result = await ingestBusEvent(
      writer,
      {
        source: workspaceSource(workspaceId),
        'detail-type': example.detailType,
        detail,
        time: new Date().toISOString(),
      },
      createLogger(),
    );

    // Assess
    expect(result).toMatchObject({ kind: 'events', accepted: 1, invalid: [] });
  });
});

describe('docs/deploy.md: the facts it states', () => {
  it('counts the Lambda functions of the synthesized stateless stack', () => {
    // Act
    const functions = Object.keys(built.statelessTemplate.findResources('AWS::Lambda::Function')).length;
    const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

    // Assess
    expect(functions).toBe(FUNCTION_NAMES.length);
    expect(DOC).toContain(`the ${words[functions]} Lambda functions`);
  });

  it('names every function reservedConcurrency takes', () => {
    // Act
    const row = DOC.split('\n').find((line) => line.startsWith('| `reservedConcurrency` |')) ?? '';
    const named = /names: ([^)]*)\)/
      .exec(row)?.[1]
      ?.match(/`(\w+)`/g)
      ?.map((name) => name.slice(1, -1));

    // Assess
    expect(named).toEqual([...FUNCTION_NAMES]);
  });

  it('lists every reason a failing notice can carry', () => {
    // Act
    const text = DOC.slice(DOC.indexOf('`reason` is one of'), DOC.indexOf('`message` is the export'));
    const listed = [...text.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]).filter((r) => r !== 'reason');

    // Assess
    expect(new Set(listed)).toEqual(
      new Set([...Object.keys(BUCKET_ERROR_NAMES), 'secret_rejected', 'invalid_location']),
    );
  });

  it('says what a member key may do as the API has it: nothing of the Data Exports API', () => {
    // Assess
    expect(DOC).not.toMatch(/members\s+can\s+read/);
    expect(DOC).toMatch(/a `member` key cannot use the Data Exports API at all/);
  });
});
