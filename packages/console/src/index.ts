export {
  buildConsole,
  CONSOLE_DIST_DIR,
  CONSOLE_SOURCE_DIR,
  type ConsoleBuild,
  type ConsoleConfig,
} from './build.js';
export { CONSOLE_PATH, consoleContentSecurityPolicy, serveConsole } from './site.js';
