import { buildConsole, CONSOLE_SOURCE_DIR, consoleContentSecurityPolicy } from '@sluice/console';
import { CfnOutput, DockerImage, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';

/** Properties of {@link ConsoleSite}. */
export interface ConsoleSiteProps {
  /**
   * The host name of the API (its custom domain, or `<api id>.execute-api.<region>.amazonaws.com`): the
   * distribution forwards `/v1/*` to it, so the console calls the API on its own origin (no CORS).
   */
  readonly apiDomainName: string;
  /** Deploy a placeholder page instead of building the console (tests). @default false */
  readonly skipBundling?: boolean;
}

/**
 * The web console as a static site: a private bucket read only by CloudFront (origin access control), a
 * distribution over HTTPS whose response headers policy sets a strict Content-Security-Policy (own scripts
 * and styles only, no inline code, requests only to its own origin) and the usual hardening headers, and a
 * deployment of the built console plus the `config.json` that tells it the API's URL.
 *
 * The same distribution forwards `/v1/*` to the API, uncached, with every viewer header but Host (the
 * Authorization header included, which CloudFront allows with caching disabled): the console and the API
 * share one origin, so the API needs no CORS for it and the CSP's `connect-src` stays `'self'`.
 */
export class ConsoleSite extends Construct {
  /** Holds the built console; never public. */
  public readonly bucket: s3.Bucket;
  /** Serves it. */
  public readonly distribution: cloudfront.Distribution;
  /** The headers every answer carries, the CSP first. */
  public readonly responseHeadersPolicy: cloudfront.ResponseHeadersPolicy;
  /** `https://<distribution domain>`: the console's origin, for the API's CORS configuration. */
  public readonly origin: string;

  constructor(scope: Construct, id: string, props: ConsoleSiteProps) {
    super(scope, id);

    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // Built files only, redeployed on every deploy; the deployment below empties it before it goes.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Holds only the built console, written by the deployment and read only by CloudFront through origin ' +
        'access control; there are no customer objects whose access would need a log.',
    });

    this.responseHeadersPolicy = new cloudfront.ResponseHeadersPolicy(this, 'Headers', {
      comment: 'Sluice console: strict CSP and hardening headers',
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: consoleContentSecurityPolicy(),
          override: true,
        },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.days(365),
          includeSubdomains: true,
          override: true,
        },
      },
    });

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Sluice console',
      defaultRootObject: 'index.html',
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        responseHeadersPolicy: this.responseHeadersPolicy,
      },
      additionalBehaviors: {
        '/v1/*': {
          origin: new origins.HttpOrigin(props.apiDomainName, {
            protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
          }),
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
          allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
          cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
          originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        },
      },
    });
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason: 'The console is for customers wherever they are; the API it calls checks every request.',
      },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          'Static files only, no origin logic: the API the console calls has its own throttling and ' +
          'authorizer, and a WAF web ACL on the console alone would protect nothing that matters.',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          'Static files only; every call that matters goes to the API, whose access log records it. ' +
          'Standard logging would need an ACL-enabled log bucket for no useful record.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          'The default CloudFront domain and certificate: CloudFront sets its minimum TLS version itself ' +
          'and it cannot be raised without a custom certificate.',
      },
    );
    this.origin = `https://${this.distribution.distributionDomainName}`;

    new s3deploy.BucketDeployment(this, 'Deploy', {
      destinationBucket: this.bucket,
      sources: [
        props.skipBundling
          ? s3deploy.Source.data('index.html', '<!doctype html><title>Sluice console (not built)</title>')
          : s3deploy.Source.asset(CONSOLE_SOURCE_DIR, {
              bundling: {
                // esbuild in-process: no Docker (the image is never used).
                image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22-alpine'),
                local: {
                  tryBundle(outputDir) {
                    buildConsole(outputDir);
                    return true;
                  },
                },
              },
            }),
        // Written after the built files, so it replaces the build's default (`/v1`, same origin).
        s3deploy.Source.jsonData('config.json', { apiUrl: `${this.origin}/v1` }),
      ],
      distribution: this.distribution,
      distributionPaths: ['/*'],
      retainOnDelete: false,
      memoryLimit: 256,
    });

    this.acknowledgeDeploymentProvider();

    new CfnOutput(scope, 'ConsoleUrl', {
      value: `${this.origin}/`,
      description: 'The web console (sign in with an API key)',
    });
  }

  /**
   * cdk-nag's findings on CDK's BucketDeployment provider (a singleton function of the stack, outside this
   * construct), acknowledged one by one with the reason each is acceptable. It runs only during deployments.
   */
  private acknowledgeDeploymentProvider(): void {
    const stack = Stack.of(this);
    const provider = stack.node.children.find((child) =>
      child.node.id.startsWith('Custom::CDKBucketDeployment'),
    );
    if (provider === undefined) throw new Error('BucketDeployment created no provider function');
    const bucketArn = `<${stack.getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket)}.Arn>`;
    const assetBucket = `arn:aws:s3:::cdk-hnb659fds-assets-${stack.account}-${stack.region}`;
    const grant =
      "is CDK's BucketDeployment grant: it reads the deployment's asset from the CDK asset bucket and " +
      "replaces the console's files in its own bucket, nothing else.";
    Validations.of(provider).acknowledge(
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason: "CDK's BucketDeployment provider writes its own logs with the basic execution role.",
      },
      ...['s3:GetBucket*', 's3:GetObject*', 's3:List*', 's3:Abort*', 's3:DeleteObject*'].map((action) => ({
        id: `AwsSolutions-IAM5[Action::${action}]`,
        reason: `${action} ${grant}`,
      })),
      { id: `AwsSolutions-IAM5[Resource::${assetBucket}/*]`, reason: `The asset bucket's objects ${grant}` },
      { id: `AwsSolutions-IAM5[Resource::${bucketArn}/*]`, reason: `The console bucket's objects ${grant}` },
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          "CloudFront's CreateInvalidation and GetInvalidation, with which the provider refreshes the " +
          'distribution after a deployment, accept no narrower resource in the grant CDK makes.',
      },
      {
        id: 'AwsSolutions-L1',
        reason: "CDK's BucketDeployment provider function picks its own runtime with each CDK release.",
      },
    );
  }
}
