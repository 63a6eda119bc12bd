export * from './bucket.js';
export * from './compaction.js';
export * from './erasure.js';
export * from './keys.js';
export * from './metrics.js';
export * from './source.js';
