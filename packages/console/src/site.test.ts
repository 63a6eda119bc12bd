import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from './build.js';
import { consoleContentSecurityPolicy, serveConsole } from './site.js';

let dir: string;
let server: Server;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-console-site-'));
  buildConsole(join(dir, 'dist'));
  // Beside the build, where a path escaping it would land.
  writeFileSync(join(dir, 'secret.txt'), 'not to be served');
  // What the site does not answer is the API's: here, a 418 that says so.
  server = createServer((req, res) => {
    // With a trailing slash, as CONSOLE_DIST_DIR has one.
    void serveConsole(join(dir, 'dist/'), req, res).then((answered) => {
      if (!answered) res.writeHead(418).end('api');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** The status of a GET of `path` exactly as written (fetch would resolve `..` and `%2e%2e` first). */
function rawStatus(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/`, { path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serveConsole', () => {
  it('serves the built console under /console/ with its CSP and content types', async () => {
    // Act
    const page = await fetch(`${base}/console/`);
    const script = await fetch(`${base}/console/console.js`);
    const config = await fetch(`${base}/console/config.json`);

    // Assess
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(consoleContentSecurityPolicy());
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).toContain('<script type="module" src="console.js"></script>');
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await config.json()).toEqual({ apiUrl: '/v1' });
  });

  it('redirects / and /console to /console/, and leaves every other path to the API', async () => {
    // Act
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    const rootPost = await fetch(`${base}/`, { method: 'POST' });
    const bare = await fetch(`${base}/console`, { redirect: 'manual' });
    const api = await fetch(`${base}/v1/data-exports`);
    const lookalike = await fetch(`${base}/consoles/x`);

    // Assess
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
    expect(rootPost.status).toBe(418);
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe('/console/');
    expect(api.status).toBe(418);
    expect(lookalike.status).toBe(418);
  });

  it('answers 404 outside the build (traversal, encoded or not) and for missing files, 405 for writes', async () => {
    // Act
    const statuses = await Promise.all(
      [
        '/console/../secret.txt',
        '/console/%2e%2e/secret.txt',
        '/console/..%2fsecret.txt',
        '/console/%00',
        '/console/nope.js',
      ].map(rawStatus),
    );
    const post = await fetch(`${base}/console/`, { method: 'POST', body: 'x' });

    // Assess
    expect(statuses).toEqual([404, 404, 404, 404, 404]);
    expect(post.status).toBe(405);
  });
});

describe('consoleContentSecurityPolicy', () => {
  it('allows own scripts and styles only, and requests to itself and the given origins', () => {
    // Act
    const policy = consoleContentSecurityPolicy(['https://api.example.com']);

    // Assess
    expect(policy).toContain("script-src 'self';");
    expect(policy).toContain("style-src 'self';");
    expect(policy).toContain("connect-src 'self' https://api.example.com;");
    expect(policy).not.toMatch(/unsafe/);
  });
});
