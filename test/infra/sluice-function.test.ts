import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';
import { afterAll, describe, expect, it } from 'vitest';
import { SluiceFunction } from '../../infra/constructs/sluice-function.js';
import { CFN_VALIDATION_FLAG, logicalIdOf } from './helpers.js';

const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

function stack(context: Record<string, unknown> = {}): Stack {
  const outdir = mkdtempSync(join(tmpdir(), 'sluice-fn-'));
  outdirs.push(outdir);
  return new Stack(new App({ outdir, context: { [CFN_VALIDATION_FLAG]: false, ...context } }), 'Fn', {
    env: { account: '111111111111', region: 'us-east-1' },
  });
}

describe('SluiceFunction', () => {
  it('merges the caller’s environment over the defaults instead of dropping either', () => {
    // Prepare
    const s = stack({ 'sluice:skipBundling': true });

    // Act
    const fn = new SluiceFunction(s, 'Probe', {
      entry: 'functions/authorizer/handler.ts',
      serviceName: 'probe',
      logRetention: logs.RetentionDays.ONE_WEEK,
      environment: { SLUICE_CONTROL_TABLE: 'control', LOG_LEVEL: 'DEBUG' },
    });
    fn.addEnvironment('LATER', 'yes');
    const resource = Template.fromStack(s).toJSON().Resources[logicalIdOf(fn)];

    // Assess
    expect(resource.Properties.Environment.Variables).toEqual({
      POWERTOOLS_SERVICE_NAME: 'probe',
      POWERTOOLS_METRICS_NAMESPACE: 'Sluice',
      LOG_LEVEL: 'DEBUG',
      NODE_OPTIONS: '--enable-source-maps',
      SLUICE_CONTROL_TABLE: 'control',
      LATER: 'yes',
    });
  });

  it('writes to its own log group, kept for the given retention, with a role limited to it', () => {
    // Prepare
    const s = stack({ 'sluice:skipBundling': true });

    // Act
    const fn = new SluiceFunction(s, 'Probe', {
      entry: 'functions/authorizer/handler.ts',
      serviceName: 'probe',
      logRetention: logs.RetentionDays.ONE_WEEK,
    });
    const t = Template.fromStack(s);

    // Assess
    t.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 7 });
    t.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: logicalIdOf(fn.logGroup) } },
    });
    expect(t.toJSON().Resources[logicalIdOf(fn.role!)].Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('bundles an ESM module with source maps that Node loads (createRequire banner included)', async () => {
    // Prepare: asset metadata names the bundle's folder (the CDK CLI turns it on the same way)
    const s = stack({ 'aws:cdk:enable-asset-metadata': true });

    // Act
    const fn = new SluiceFunction(s, 'Bundled', {
      entry: 'functions/authorizer/handler.ts',
      serviceName: 'authorizer',
      logRetention: logs.RetentionDays.ONE_WEEK,
      environment: { SLUICE_CONTROL_TABLE: 'control' },
    });
    const assembly = s.node.root as App;
    const out = assembly.synth();
    const resource = out.getStackByName('Fn').template.Resources[logicalIdOf(fn)];
    const assetDir = join(out.directory, resource.Metadata['aws:asset:path']);
    process.env.SLUICE_CONTROL_TABLE ??= 'control';
    const module = (await import(pathToFileURL(join(assetDir, 'index.mjs')).href)) as { handler?: unknown };

    // Assess
    expect(resource.Properties.Handler).toBe('index.handler');
    expect(existsSync(join(assetDir, 'index.mjs.map'))).toBe(true);
    expect(readFileSync(join(assetDir, 'index.mjs'), 'utf8').slice(0, 200)).toContain('createRequire');
    expect(typeof module.handler).toBe('function');
  });
});
