export * from './dynamodb-local.js';
export * from './jar.js';
export * from './kms-local.js';
export * from './local-tables.js';
export * from './runtime-config.js';
export * from './s3-local.js';
export * from './services.js';
export * from './async-invoke.js';
