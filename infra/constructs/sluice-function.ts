import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** The repository root: entries, the lock file and esbuild's working directory are resolved from it. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The context flag that packages every function as an inline placeholder instead of bundling it. */
export const SKIP_BUNDLING_CONTEXT = 'sluice:skipBundling';

/**
 * Makes an ESM bundle able to `require()` the CommonJS dependencies that esbuild leaves as calls
 * (the AWS SDK's and Powertools' transitive deps do).
 */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __sluiceCreateRequire } from 'node:module'; const require = __sluiceCreateRequire(import.meta.url);";

/** Properties of {@link SluiceFunction}. */
export interface SluiceFunctionProps
  extends Omit<
    nodejs.NodejsFunctionProps,
    'entry' | 'code' | 'runtime' | 'architecture' | 'logGroup' | 'role'
  > {
  /** The handler file, relative to the repository root, e.g. `functions/api/handler.ts`. */
  readonly entry: string;
  /** `POWERTOOLS_SERVICE_NAME`, also the log group's suffix. */
  readonly serviceName: string;
  /** Retention of the function's log group. */
  readonly logRetention: logs.RetentionDays;
  /** What happens to the log group when the stack is deleted. @default RemovalPolicy.DESTROY */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** Powertools `LOG_LEVEL`. @default 'INFO' */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /**
   * Package an inline placeholder instead of bundling with esbuild, so tests and the local Step Functions
   * runner can synthesize in milliseconds, before the handlers exist.
   * @default - the `sluice:skipBundling` context value, else false
   */
  readonly skipBundling?: boolean;
}

/**
 * A Lambda function with Sluice's defaults: Node.js 22 on arm64, an ESM bundle with source maps, its own
 * log group with a retention, the Powertools environment, and a role that may write only to that log group
 * (no `AWSLambdaBasicExecutionRole`, whose `logs:CreateLogGroup` on `*` nothing here needs).
 *
 * The caller's `environment` is merged over the defaults, never dropped; grants and the variables that
 * name the granted resources are meant to be added together (see `StatelessStack`).
 */
export class SluiceFunction extends nodejs.NodejsFunction {
  constructor(scope: Construct, id: string, props: SluiceFunctionProps) {
    const {
      entry,
      serviceName,
      logRetention,
      logRemovalPolicy,
      logLevel,
      skipBundling,
      environment,
      bundling,
      ...rest
    } = props;
    const skip = skipBundling ?? isTrue(scope.node.tryGetContext(SKIP_BUNDLING_CONTEXT));

    const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
      retention: logRetention,
      removalPolicy: logRemovalPolicy ?? RemovalPolicy.DESTROY,
    });
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Sluice ${serviceName} function`,
    });
    logGroup.grantWrite(role);

    super(scope, id, {
      memorySize: 512,
      timeout: Duration.seconds(30),
      ...rest,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      logGroup,
      role,
      loggingFormat: lambda.LoggingFormat.JSON,
      environment: {
        POWERTOOLS_SERVICE_NAME: serviceName,
        POWERTOOLS_METRICS_NAMESPACE: 'Sluice',
        LOG_LEVEL: logLevel ?? 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        ...environment,
      },
      ...(skip
        ? {
            code: lambda.Code.fromInline(
              `export const handler = async () => { throw new Error('${serviceName}: synthesized with sluice:skipBundling'); };`,
            ),
            handler: 'index.handler',
          }
        : {
            entry: path.join(PROJECT_ROOT, entry),
            handler: 'handler',
            projectRoot: PROJECT_ROOT,
            depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
            bundling: {
              format: nodejs.OutputFormat.ESM,
              target: 'node22',
              mainFields: ['module', 'main'],
              banner: ESM_REQUIRE_BANNER,
              sourceMap: true,
              sourceMapMode: nodejs.SourceMapMode.EXTERNAL,
              sourcesContent: false,
              minify: true,
              // Error classification reads `error.name` and `constructor.name`: keep them through minification.
              keepNames: true,
              // Ship the SDK version the tests ran against, not whatever the runtime carries.
              bundleAwsSDK: true,
              // The WebAssembly zstd serves node versions without zlib's zstd (the local runtime on node 20);
              // the nodejs22.x runtime compresses Parquet pages with zlib's, so the fallback is not shipped.
              externalModules: ['@bokuweb/zstd-wasm'],
              tsconfig: path.join(PROJECT_ROOT, 'tsconfig.json'),
              ...bundling,
            },
          }),
    });
  }
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}
