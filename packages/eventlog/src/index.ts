export * from './batch.js';
export * from './bus.js';
export * from './client.js';
export * from './generate.js';
export * from './ingest.js';
export * from './keys.js';
export * from './reader.js';
export * from './source.js';
