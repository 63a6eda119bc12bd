export * from './http-adapter.js';
export * from './local-functions.js';
export * from './local-output.js';
export * from './runtime-config.js';
export * from './workflow-definitions.js';
