import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { Errors } from '../errors/catalogue.js';

/** Paths the console never answers: they keep their API meaning (JSON 404 when unknown). */
const RESERVED = [/^\/api(\/|$)/, /^\/ws(\/|$)/, /^\/health(\/|$)/, /^\/metrics(\/|$)/];

/** Vite names built assets by content hash: they never change under the same name. */
const HASHED_ASSET = /^assets\//;
const ONE_YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * Every page may load only from this origin: no CDN, fonts or analytics can sneak in, and the
 * browser reports any attempt (which the console's browser tests treat as a failure).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "script-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The built files below `root`, as URL paths relative to it (`assets/index-1a2b.js`). */
function listFiles(root: string): Set<string> {
  const files = new Set<string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else files.add(relative(root, full).split(sep).join('/'));
    }
  };
  walk(root);
  return files;
}

/** True when `dir` holds a built console (its index.html). */
export function consoleBuilt(dir: string): boolean {
  return existsSync(join(dir, 'index.html'));
}

/**
 * Serves the built operator console at `/`: known files as they are (hashed assets cached for a
 * year), and `index.html` for every other GET outside the API paths, so a deep link such as
 * `/threads/<id>` reloads into the same view. The console itself signs in with a token; its
 * files are public (they hold no data).
 */
export async function registerConsole(app: FastifyInstance, dir: string): Promise<void> {
  const files = listFiles(dir);
  await app.register(fastifyStatic, { root: dir, serve: false, index: false });

  const sendIndex = (reply: FastifyReply) =>
    reply.header('Content-Security-Policy', CONTENT_SECURITY_POLICY).header('Cache-Control', 'no-cache').sendFile('index.html', dir, { cacheControl: false });

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = (request.url.split('?')[0] ?? '/').replace(/\/+$/, '') || '/';
    if (RESERVED.some((r) => r.test(path))) throw Errors.ROUTE_NOT_FOUND(request.method, path.slice(0, 200));
    let file: string;
    try {
      file = decodeURIComponent(path.slice(1));
    } catch {
      file = '';
    }
    if (file !== 'index.html' && files.has(file)) {
      if (HASHED_ASSET.test(file)) return reply.sendFile(file, dir, { maxAge: ONE_YEAR_MS, immutable: true });
      return reply.header('Cache-Control', 'no-cache').sendFile(file, dir, { cacheControl: false });
    }
    // A missing asset is a 404, not the page (a stale index must not get HTML for its script).
    if (HASHED_ASSET.test(file)) throw Errors.ROUTE_NOT_FOUND(request.method, path.slice(0, 200));
    return sendIndex(reply);
  };
  const config = { access: 'public' as const };
  // The page's own query (e.g. /journal?state=FAILED) is for the console, not for the server.
  const schema = { hide: true, querystring: { type: 'object', additionalProperties: true } };
  app.get('/', { config, schema }, handler);
  app.get('/*', { config, schema }, handler);
}
