/**
 * What the console's host answers, shared by the local runtime (`serveConsole`) and the CDK app (the
 * CloudFront response headers policy reads {@link consoleContentSecurityPolicy}).
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';

/** Where the console is served beside the API. */
export const CONSOLE_PATH = '/console/';

/**
 * The console's Content-Security-Policy: its own scripts and styles only (no inline script or style, no
 * eval), no plugins, no frames, and requests only to itself and `apiOrigins` (the API, when on another
 * origin).
 */
export function consoleContentSecurityPolicy(apiOrigins: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${["'self'", ...apiOrigins].join(' ')}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Headers of every console answer: the CSP, and the ones the CloudFront policy sets too. */
function securityHeaders(): Record<string, string> {
  return {
    'content-security-policy': consoleContentSecurityPolicy(),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-cache',
  };
}

/**
 * Answers `GET`/`HEAD` under {@link CONSOLE_PATH} from the built console in `dir` (`/` and `/console` redirect
 * to `/console/`, a directory is its `index.html`); returns false for any other request, which is the API's.
 * Never serves a file outside `dir`.
 */
export async function serveConsole(dir: string, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const method = req.method ?? 'GET';
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path === '/' && (method === 'GET' || method === 'HEAD')) {
    // The server's root is the console: a person opening it should not meet the API's 401.
    res.writeHead(302, { location: CONSOLE_PATH });
    res.end();
    return true;
  }
  if (path !== '/console' && !path.startsWith(CONSOLE_PATH)) return false;
  if (method !== 'GET' && method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
    res.end('Method Not Allowed');
    return true;
  }
  if (path === '/console') {
    res.writeHead(308, { location: CONSOLE_PATH });
    res.end();
    return true;
  }
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice(CONSOLE_PATH.length));
  } catch {
    relative = '\0';
  }
  if (relative === '' || relative.endsWith('/')) relative += 'index.html';
  const root = resolve(dir);
  const file = normalize(join(root, relative));
  if (relative.includes('\0') || !file.startsWith(root + sep)) return notFound(res);
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    return notFound(res);
  }
  res.writeHead(200, {
    ...securityHeaders(),
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': body.length,
  });
  res.end(method === 'HEAD' ? undefined : body);
  return true;
}

function notFound(res: ServerResponse): true {
  res.writeHead(404, { ...securityHeaders(), 'content-type': 'text/plain; charset=utf-8' });
  res.end('Not Found');
  return true;
}
