export { buildConsole, CONSOLE_DIST_DIR, type ConsoleBuild } from './build.js';
export { CONSOLE_PATH, consoleContentSecurityPolicy, serveConsole } from './site.js';
