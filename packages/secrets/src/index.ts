export * from './sealer.js';
export * from './cache.js';
