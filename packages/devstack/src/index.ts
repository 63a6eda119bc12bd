/**
 * The local stand-ins for the AWS services Sluice runs on, for `npm start`, the tests and the bench: DynamoDB Local
 * (and its jar), the S3 server with its Signature V4 check, KMS, the event bus, the Step Functions runner and its
 * schedule, asynchronous Lambda invocation, and the tables. It knows nothing of `functions/` or `infra/`: the
 * callers bring the workflow definitions and the handlers (`@sluice/local` brings the app's own).
 */
export * from './async-invoke.js';
export * from './bus-local.js';
export * from './dynamodb-local.js';
export * from './jar.js';
export * from './kms-local.js';
export * from './local-tables.js';
export * from './s3-local.js';
export * from './scheduler.js';
export * from './services.js';
export * from './stepfunctions.js';
export * from './stream-local.js';
export * from './template.js';
