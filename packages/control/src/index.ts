export * from './client.js';
export * from './items.js';
export * from './api-keys.js';
export * from './workspaces.js';
export * from './runs.js';
export * from './destinations.js';
export * from './export-state.js';
export * from './due-index.js';
