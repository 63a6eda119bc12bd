import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ConsoleSite } from './constructs/console-site.js';
import type { SluiceHttpApi } from './constructs/http-api.js';

/** Properties of {@link ConsoleStack}. */
export interface ConsoleStackProps extends StackProps {
  readonly stage: string;
  /** The API the console calls (through its distribution, under `/v1/`). */
  readonly api: SluiceHttpApi;
  /** The API's custom domain, when it has one. @default - the execute-api host */
  readonly apiDomainName?: string;
  /** Deploy a placeholder page instead of building the console. @default false */
  readonly skipBundling?: boolean;
}

/**
 * The web console (`ConsoleSite`: S3, CloudFront with origin access control, a strict CSP), deployed after
 * the stateless stack whose API it forwards `/v1/*` to. Its own stack, so the stateless stack keeps only the
 * service and the deployment's helper function stays out of its least-privilege checks.
 */
export class ConsoleStack extends Stack {
  public readonly site: ConsoleSite;

  constructor(scope: Construct, id: string, props: ConsoleStackProps) {
    super(scope, id, {
      description: `Sluice (${props.stage}): the web console, a static site in front of the API.`,
      ...props,
    });
    this.site = new ConsoleSite(this, 'Console', {
      apiDomainName:
        props.apiDomainName ?? `${props.api.httpApi.apiId}.execute-api.${this.region}.${this.urlSuffix}`,
      skipBundling: props.skipBundling ?? false,
    });
  }
}
