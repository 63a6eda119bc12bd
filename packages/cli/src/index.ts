export * from './api-client.js';
export * from './connection.js';
export * from './context.js';
export * from './data-exports.js';
export * from './format.js';
export * from './program.js';
export * from './secret.js';
export { createDataCommands, type DataCommandDeps } from './operator/data.js';
export * from './files-pull.js';
