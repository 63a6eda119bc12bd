import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConsoleSite } from '../../infra/constructs/console-site.js';
import { build } from './helpers.js';

/** The managed policies the API behaviour must use: no caching, every viewer header but Host. */
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

function consoleTemplate(context: Record<string, unknown> = {}): Template {
  return Template.fromStack(build(context).console);
}

/** The default app's console stack, built once (a build takes seconds). */
let defaults: Template;
beforeAll(() => {
  defaults = consoleTemplate();
});

describe('console stack', () => {
  it('serves the console with a strict CSP: own scripts and styles only, nothing inline, calls to itself only', () => {
    const t = defaults;

    // Assess
    const [policy] = Object.values(t.findResources('AWS::CloudFront::ResponseHeadersPolicy'));
    const headers = policy?.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    const csp: string = headers.ContentSecurityPolicy.ContentSecurityPolicy;
    expect(headers.ContentSecurityPolicy.Override).toBe(true);
    expect(csp.split('; ')).toEqual(
      expect.arrayContaining([
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
      ]),
    );
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(headers).toMatchObject({
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY' },
      StrictTransportSecurity: { IncludeSubdomains: true },
    });
    t.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultRootObject: 'index.html',
        DefaultCacheBehavior: Match.objectLike({
          ViewerProtocolPolicy: 'redirect-to-https',
          AllowedMethods: ['GET', 'HEAD'],
          ResponseHeadersPolicyId: { Ref: Match.stringLikeRegexp('^ConsoleHeaders') },
        }),
      }),
    });
  });

  it('keeps the bucket private: public access blocked, read by the distribution through origin access control', () => {
    const t = defaults;

    // Assess
    t.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
    });
    t.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    const [distribution] = Object.values(t.findResources('AWS::CloudFront::Distribution'));
    const s3Origin = distribution?.Properties.DistributionConfig.Origins.find(
      (origin: { S3OriginConfig?: unknown }) => origin.S3OriginConfig !== undefined,
    );
    expect(s3Origin.OriginAccessControlId).toEqual({ 'Fn::GetAtt': [expect.any(String), 'Id'] });
    t.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudfront.amazonaws.com' },
            Action: 's3:GetObject',
            Condition: { StringEquals: { 'AWS:SourceArn': Match.anyValue() } },
          }),
        ]),
      },
    });
  });

  it('forwards /v1/* to the API uncached with the Authorization header, over HTTPS only', () => {
    const t = defaults;

    // Assess
    const [distribution] = Object.values(t.findResources('AWS::CloudFront::Distribution'));
    const config = distribution?.Properties.DistributionConfig;
    expect(config.CacheBehaviors).toEqual([
      expect.objectContaining({
        PathPattern: '/v1/*',
        CachePolicyId: CACHING_DISABLED,
        OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST_HEADER,
        ViewerProtocolPolicy: 'https-only',
      }),
    ]);
    const apiOrigin = config.Origins.find(
      (origin: { Id: string }) => origin.Id === config.CacheBehaviors[0].TargetOriginId,
    );
    expect(apiOrigin.CustomOriginConfig.OriginProtocolPolicy).toBe('https-only');
    expect(JSON.stringify(apiOrigin.DomainName)).toMatch(/ApiHttpApi.*\.execute-api\./);
  });

  it("forwards to the API's custom domain when there is one", () => {
    // Act
    const t = consoleTemplate({
      domainName: 'exports.example.com',
      certificateArn: 'arn:aws:acm:us-east-1:111111111111:certificate/11111111-2222-3333-4444-555555555555',
    });

    // Assess
    const [distribution] = Object.values(t.findResources('AWS::CloudFront::Distribution'));
    const domains = distribution?.Properties.DistributionConfig.Origins.map(
      (origin: { DomainName: unknown }) => origin.DomainName,
    );
    expect(domains).toContain('exports.example.com');
  });

  it('deploys the console and a config.json naming the API on the distribution, then invalidates it', () => {
    const t = defaults;

    // Assess: two sources (the build, then config.json with the distribution's domain as its marker)
    const [deployment] = Object.values(t.findResources('Custom::CDKBucketDeployment'));
    expect(deployment?.Properties.SourceObjectKeys).toHaveLength(2);
    expect(deployment?.Properties.SourceMarkers[1]).toEqual({
      [Object.keys(deployment?.Properties.SourceMarkers[1])[0] ?? '']: {
        'Fn::GetAtt': [expect.stringMatching(/^ConsoleDistribution/), 'DomainName'],
      },
    });
    expect(deployment?.Properties).toMatchObject({ DistributionPaths: ['/*'], RetainOnDelete: false });
  });

  it('builds the real console into the asset when bundling is on (esbuild in-process, no Docker)', () => {
    // Prepare
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'sluice-console-cdk-')) });
    const stack = new Stack(app, 'Probe', { env: { account: '111111111111', region: 'us-east-1' } });

    // Act
    new ConsoleSite(stack, 'Console', { apiDomainName: 'api.example.com' });
    const assembly = app.synth();

    // Assess: a staged asset holding the bundle, whose page loads scripts and styles from files only
    const staged = readdirSync(assembly.directory)
      .map((name) => join(assembly.directory, name))
      .find((dir) => existsSync(join(dir, 'console.js')));
    expect(staged).toBeDefined();
    expect(readdirSync(staged!).sort()).toEqual(
      expect.arrayContaining(['config.json', 'console.css', 'console.js', 'index.html']),
    );
    const html = readFileSync(join(staged!, 'index.html'), 'utf8');
    expect(html).toMatch(/<script type="module" src="console\.js"><\/script>/);
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|\sstyle=|\son\w+=/i);
    rmSync(assembly.directory, { recursive: true, force: true });
  });
});
