export * from './sealer.js';
