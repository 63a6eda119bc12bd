import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkDeviations, diffOpenApi, formatReport, parseDeviations, passes } from './diff.js';

function fixture(name: string): string {
  return readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
}
function documentOf(name: string): Record<string, unknown> {
  return parse(fixture(name)) as Record<string, unknown>;
}

const reference = documentOf('reference.yaml');
const names = { document: 'document', reference: 'reference', deviations: 'deviations.yaml' };

describe('diffOpenApi', () => {
  it('finds nothing between a document and itself', () => {
    expect(diffOpenApi(reference, structuredClone(reference))).toEqual([]);
  });

  it('passes additions: a path, a status code, an optional parameter and property, an enum value', () => {
    // Act
    const findings = diffOpenApi(reference, documentOf('addition.yaml'));
    const check = checkDeviations(findings, []);

    // Assess: reworded texts and the 404 schema written inline are no finding at all
    expect(findings).toEqual([
      {
        kind: 'addition',
        at: 'paths /things get parameters query cursor',
        change: 'adds an optional parameter query cursor',
      },
      { kind: 'addition', at: 'paths /things get responses 503', change: 'adds status 503' },
      { kind: 'addition', at: 'paths /things/{id}', change: 'adds path /things/{id}' },
      {
        kind: 'addition',
        at: 'components schemas Thing properties colour',
        change: 'adds enum values ["blue"]',
      },
      { kind: 'addition', at: 'components schemas Thing properties weight', change: 'adds property weight' },
    ]);
    expect(passes(check)).toBe(true);
  });

  it('fails a removal or a change that is not listed, and says where and what', () => {
    // Act
    const findings = diffOpenApi(reference, documentOf('removal.yaml'));
    const check = checkDeviations(findings, []);
    const report = formatReport(findings, check, names);

    // Assess
    expect(passes(check)).toBe(false);
    expect(check.unlisted.map((finding) => `${finding.at}: ${finding.change}`)).toEqual([
      'paths /things get parameters query limit schema: changes maximum from 100 to 50',
      'paths /things get responses 404: removes status 404',
      'components schemas Thing: now requires colour',
      'components schemas Thing properties id: changes the type from "string" to "integer"',
      'components schemas Thing properties colour: removes enum values ["green"]',
      'components schemas Thing properties size: removes property size',
    ]);
    expect(report).toContain('FAILED: 6 deviations from the reference are not listed in deviations.yaml.');
    expect(report).toContain('    paths /things get responses 404: removes status 404');
  });

  it('passes the same removals and changes once each is listed with its reason', () => {
    // Act
    const findings = diffOpenApi(reference, documentOf('removal.yaml'));
    const check = checkDeviations(findings, parseDeviations(fixture('deviations.yaml')));
    const report = formatReport(findings, check, names);

    // Assess
    expect(check.unlisted).toEqual([]);
    expect(check.stale).toEqual([]);
    expect(passes(check)).toBe(true);
    expect(report).toContain('      why: Ids are numbered by the database.');
    expect(report).toContain('OK: every deviation from the reference is listed with its reason.');
  });

  it('fails an entry of the list that matches no deviation any more', () => {
    // Act: the additions document deviates nowhere, so every listed entry is stale
    const findings = diffOpenApi(reference, documentOf('addition.yaml'));
    const check = checkDeviations(findings, parseDeviations(fixture('deviations.yaml')));

    // Assess
    expect(passes(check)).toBe(false);
    expect(check.stale.map((deviation) => deviation.at)).toContain('paths /things get responses 404');
    expect(formatReport(findings, check, names)).toContain(
      'FAILED: 6 entries of deviations.yaml match no deviation',
    );
  });

  it('treats a new required property, a removed operation and a new required parameter as deviations', () => {
    // Prepare
    const document = structuredClone(reference) as {
      paths: Record<string, Record<string, { parameters: unknown[] }>>;
      components: { schemas: Record<string, { required: string[] }> };
    };
    document.components.schemas.Error!.required.push('code');
    document.paths['/things']!.get!.parameters.push({ name: 'q', in: 'query', required: true, schema: {} });
    document.paths['/things']!.post = document.paths['/things']!.get!;
    const withoutGet = structuredClone(reference) as { paths: Record<string, Record<string, unknown>> };
    delete withoutGet.paths['/things']!.get;

    // Act
    const changed = diffOpenApi(reference, document);
    const removed = diffOpenApi(reference, withoutGet);

    // Assess
    expect(changed.filter((finding) => finding.kind === 'deviation')).toEqual([
      {
        kind: 'deviation',
        at: 'paths /things get parameters query q',
        change: 'adds a required parameter query q',
      },
      { kind: 'deviation', at: 'components schemas Error', change: 'now requires code' },
    ]);
    expect(removed).toEqual([
      { kind: 'deviation', at: 'paths /things get', change: 'removes operation GET' },
    ]);
  });
});

describe('parseDeviations', () => {
  it('reads a list of {at, reason}', () => {
    expect(parseDeviations('- at: servers\n  reason: The servers are relative to the deployment.\n')).toEqual(
      [{ at: 'servers', reason: 'The servers are relative to the deployment.' }],
    );
  });

  it('refuses an entry without a reason, an unknown key and an entry listed twice, naming each', () => {
    // Prepare
    const text = [
      '- at: servers',
      '- at: openapi',
      '  reason: The version is newer than the reference.',
      '  why: extra',
      '- at: openapi',
      '  reason: The version is newer than the reference.',
    ].join('\n');

    // Act
    const parse = () => parseDeviations(text);

    // Assess
    expect(parse).toThrow(/entry 1 \(servers\) needs a reason/);
    expect(parse).toThrow(/entry 2 has unknown keys: why/);
    expect(parse).toThrow(/openapi is listed twice/);
  });

  it('reads an empty file as no deviation', () => {
    expect(parseDeviations('# nothing yet\n')).toEqual([]);
  });
});
