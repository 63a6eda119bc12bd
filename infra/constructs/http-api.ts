import { PUBLIC_ROUTES } from '@sluice/api';
import { CfnOutput, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as authorizers from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as integrations from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The route prefixes of the Data Exports API; both serve the same operations. */
export const API_ROUTE_PATHS = ['/v1/{proxy+}', '/api/v1/{proxy+}'] as const;

/**
 * How long API Gateway caches the authorizer's answer for one Authorization header. A minute at most, so a
 * verdict never outlives a revoked, deleted or narrowed key by more; the API function reads the key again on
 * every request anyway (its per-key rate limit's write), so in practice such a change applies at once.
 */
export const AUTHORIZER_CACHE_TTL = Duration.seconds(60);

/** Properties of {@link SluiceHttpApi}. */
export interface SluiceHttpApiProps {
  /** Serves every route. */
  readonly apiFunction: lambda.IFunction;
  /** Checks the Bearer key and returns `{isAuthorized, context}` (simple responses). */
  readonly authorizerFunction: lambda.IFunction;
  /** Retention of the access log group. */
  readonly logRetention: logs.RetentionDays;
  /** What happens to the access log group when the stack is deleted. @default RemovalPolicy.DESTROY */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** Browser origins allowed by CORS. @default - CORS off: no CORS headers, no preflight answers */
  readonly corsOrigins?: readonly string[];
  /**
   * The name of a custom domain that exists outside this construct (the stateful stack holds it): the
   * `$default` stage is mapped onto it. @default - only the execute-api URL
   */
  readonly domainName?: string;
  /** Steady-state requests per second for the whole stage. @default 50 */
  readonly rateLimit?: number;
  /** Burst of requests for the whole stage. @default 100 */
  readonly burstLimit?: number;
}

/**
 * The Data Exports HTTP API: `ANY /v1/{proxy+}` and `ANY /api/v1/{proxy+}` to the API function behind a
 * Lambda authorizer, `GET /v1/openapi.json` and `GET /api/v1/openapi.json` (`PUBLIC_ROUTES`) to the same
 * function without it, a `$default` stage with throttling and JSON access logs, CORS only when origins are
 * configured (then the routes are GET, POST, PATCH and DELETE, so preflights never meet the authorizer), and
 * an optional mapping onto a custom domain held elsewhere.
 *
 * The authorizer's identity source is the `Authorization` header, which lets API Gateway cache its answer
 * ({@link AUTHORIZER_CACHE_TTL}). The price: a request without that header never reaches the authorizer;
 * API Gateway answers it with `401 {"message":"Unauthorized"}` itself, not with Sluice's error body. A value
 * that cannot be a Sluice key (wrong prefix, length, characters or checksum) reaches the authorizer, which
 * refuses it without a database read; an HTTP API has no way to match a header's shape before that.
 */
export class SluiceHttpApi extends Construct {
  /** The HTTP API. */
  public readonly httpApi: apigwv2.HttpApi;
  /** The `$default` stage. */
  public readonly stage: apigwv2.HttpStage;
  /** Where API Gateway writes one JSON line per request. */
  public readonly accessLogGroup: logs.LogGroup;
  /** The base URL customers call, ending in `/v1` (custom domain when configured). */
  public readonly apiUrl: string;
  /** The mapping of the `$default` stage onto the custom domain, when one is configured. */
  public readonly domainMapping?: apigwv2.CfnApiMapping;

  constructor(scope: Construct, id: string, props: SluiceHttpApiProps) {
    super(scope, id);

    const corsPreflight: apigwv2.CorsPreflightOptions | undefined = props.corsOrigins
      ? {
          allowOrigins: [...props.corsOrigins],
          allowMethods: [
            apigwv2.CorsHttpMethod.GET,
            apigwv2.CorsHttpMethod.POST,
            apigwv2.CorsHttpMethod.PATCH,
            apigwv2.CorsHttpMethod.DELETE,
          ],
          allowHeaders: ['authorization', 'content-type'],
          maxAge: Duration.hours(1),
        }
      : undefined;

    this.httpApi = new apigwv2.HttpApi(this, 'HttpApi', {
      description: 'Sluice Data Exports API',
      createDefaultStage: false,
      corsPreflight,
    });

    this.accessLogGroup = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.DESTROY,
    });

    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.rateLimit ?? 50, burstLimit: props.burstLimit ?? 100 },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogGroup),
        format: apigateway.AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTimeEpoch',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationLatencyMs: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
            authorizerError: '$context.authorizer.error',
            userAgent: '$context.identity.userAgent',
          }),
        ),
      },
    });

    if (props.domainName !== undefined) {
      // By name, not by reference: the domain lives in the stateful stack, and a cross-stack export would
      // pin it there (removing the domain would deadlock on the export). The stack dependency orders them.
      this.domainMapping = new apigwv2.CfnApiMapping(this, 'DomainMapping', {
        apiId: this.httpApi.apiId,
        domainName: props.domainName,
        stage: this.stage.stageName,
      });
      this.domainMapping.addResourceDependency(this.stage.node.defaultChild as apigwv2.CfnStage);
    }

    const integration = new integrations.HttpLambdaIntegration('ApiIntegration', props.apiFunction, {
      payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
    });
    const authorizer = new authorizers.HttpLambdaAuthorizer('ApiKeyAuthorizer', props.authorizerFunction, {
      authorizerName: 'api-key',
      responseTypes: [authorizers.HttpLambdaResponseType.SIMPLE],
      identitySource: ['$request.header.Authorization'],
      resultsCacheTtl: AUTHORIZER_CACHE_TTL,
    });
    // ANY would also catch the browser's OPTIONS preflight and send it to the authorizer, which has no
    // Authorization header to see: with CORS on, the routes name the API's four methods instead, and API
    // Gateway answers preflights itself from the CORS configuration.
    const methods = corsPreflight
      ? [apigwv2.HttpMethod.GET, apigwv2.HttpMethod.POST, apigwv2.HttpMethod.PATCH, apigwv2.HttpMethod.DELETE]
      : [apigwv2.HttpMethod.ANY];
    for (const path of API_ROUTE_PATHS) {
      this.httpApi.addRoutes({ path, methods, integration, authorizer });
    }
    // The OpenAPI document needs no key: its exact GET routes win over the proxy routes, without the authorizer.
    const noAuthorizer = new apigwv2.HttpNoneAuthorizer();
    for (const route of PUBLIC_ROUTES) {
      const [publicRoute] = this.httpApi.addRoutes({
        path: route.path,
        methods: [apigwv2.HttpMethod[route.method]],
        integration,
        authorizer: noAuthorizer,
      });
      Validations.of(publicRoute!).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          'GET of the public OpenAPI document; it holds no customer data, and every other route has the authorizer.',
      });
    }

    this.apiUrl = props.domainName !== undefined ? `https://${props.domainName}/v1` : `${this.stage.url}v1`;
    new CfnOutput(scope, 'ApiUrl', { value: this.apiUrl, description: 'Base URL of the Data Exports API' });
  }
}
