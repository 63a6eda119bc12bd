export * from './datasets.js';
export * from './errors.js';
export * from './destination.js';
export * from './tables.js';
export * from './rows.js';
export * from './windows.js';
export * from './layout.js';
