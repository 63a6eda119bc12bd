/**
 * The API function, built from its configuration. `handler.ts` builds it from the environment; the local
 * runtime builds it with the local bucket's origin allow-listed.
 */
import type {
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
} from 'aws-lambda';
import { type AuthorizerContext, createApiHandler } from '@sluice/api';
import { ApiKeyMeter, ArchiveCursorStore, BackfillStore, ControlStore } from '@sluice/control';
import { SecretSealer } from '@sluice/secrets';
import { createAuthorizer } from '../authorizer/authorize.js';
import type { LambdaFunction } from '../lambda.js';
import type { ApiConfig } from './config.js';

/** What only the local runtime passes. */
export interface LocalOnlyOptions {
  /** Origins exempt from the endpoint rules. @default none: every endpoint is checked */
  allowedEndpoints?: ReadonlySet<string>;
  /** False where no AWS STS can be reached: role destinations fail with a message saying so. @default true */
  assumeRoles?: boolean;
  /** Origins whose buckets are not checked for a lifecycle rule (the local bucket). @default none */
  withoutLifecycleCheck?: ReadonlySet<string>;
}

/** The API function's handler over the configured stores. */
export function createApiFunction(
  config: ApiConfig,
  options: LocalOnlyOptions = {},
): LambdaFunction<
  APIGatewayProxyEventV2WithLambdaAuthorizer<AuthorizerContext>,
  APIGatewayProxyStructuredResultV2
> {
  const store = new ControlStore({ tableName: config.controlTable });
  const authorizeAgain = createAuthorizer(store);
  const api = createApiHandler({
    store,
    sealer: new SecretSealer({ keyId: config.kmsKeyId }),
    backfills: new BackfillStore({ tableName: config.controlTable }),
    archiveCoverage: new ArchiveCursorStore({ tableName: config.controlTable }),
    eventRetentionMs: config.eventRetentionMs,
    ownAccountId: config.accountId,
    maxExportsPerWorkspace: config.maxExportsPerWorkspace,
    keyMeter: new ApiKeyMeter({ tableName: config.controlTable, limit: config.apiKeyRateLimit }),
    // The gateway caches a verdict for up to a minute: a cached "store unavailable" is checked again here.
    recheckKey: async (request) => (await authorizeAgain({ headers: request.headers })).context,
    ...(options.allowedEndpoints ? { allowedEndpoints: options.allowedEndpoints } : {}),
    ...(options.assumeRoles === false ? { assumeRoles: false } : {}),
    ...(options.withoutLifecycleCheck ? { withoutLifecycleCheck: options.withoutLifecycleCheck } : {}),
  });
  // The API's own middy chain (`createApiHandler`) carries the Lambda context, the body parser and the error handler.
  return (event, context) => api(event, context);
}
