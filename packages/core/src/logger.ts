import { Logger } from '@aws-lambda-powertools/logger';
import { redactSecrets } from './redact.js';

/** What a caller may set on a Sluice logger; never the service name. */
export interface SluiceLoggerOptions {
  /** @default `POWERTOOLS_LOG_LEVEL`, else `LOG_LEVEL` (the stack sets it), else INFO */
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
}

/**
 * The one way Sluice makes a logger: Powertools JSON lines with secrets redacted. The service name is not set
 * here, so Powertools takes the `POWERTOOLS_SERVICE_NAME` the stack gives each function (the local runtime sets
 * its own). Lambda entry points add the request id and cold-start flag with middy's `injectLambdaContext`.
 */
export function createLogger(options: SluiceLoggerOptions = {}): Logger {
  return new Logger({ jsonReplacerFn: redactSecrets, ...options });
}
