// Real parts for the console's browser tests: a real `organism serve` process (the built CLI)
// on a temp data dir, and Debian's Chromium driven by playwright-core (never a downloaded browser).
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const OP_TOKEN = 'console-operator-token-7f3a';
export const VIEW_TOKEN = 'console-viewer-token-91bc';
const BIN = path.resolve('bin/organism.js');
const FIXTURE = path.resolve('test/console/fixture');

/** A free TCP port on loopback (the server must keep it across restarts, so not port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Server {
  readonly url: string;
  readonly dir: string;
  readonly configPath: string;
  readonly proc: ChildProcess;
  output(): string;
  // biome-ignore lint/suspicious/noExplicitAny: a response body, read by the tests as whatever they expect
  api<T = any>(method: string, route: string, body?: unknown, token?: string): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/**
 * Starts `organism serve` on a copy of the fixture organism; resolves once it prints its URLs.
 * `prepare` may change the copy first (add listeners, files) for a test of its own.
 */
export async function startServer(extraArgs: string[] = [], options: { prepare?: (dir: string) => void } = {}): Promise<Server> {
  if (!existsSync(path.resolve('dist/console/index.html'))) throw new Error('console not built: run npm run build:console');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-console-'));
  cpSync(FIXTURE, dir, { recursive: true });
  options.prepare?.(dir);
  const configPath = path.join(dir, 'organism.yaml');
  const port = await freePort();
  const proc = spawn(process.execPath, [BIN, 'serve', configPath, '--port', String(port), '--data-dir', path.join(dir, 'data'), '--log-level', 'warn', ...extraArgs], {
    env: { ...process.env, CONSOLE_OP_TOKEN: OP_TOKEN, CONSOLE_VIEW_TOKEN: VIEW_TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += String(d)));
  proc.stderr!.on('data', (d) => (out += String(d)));
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`serve did not start in 60 s:\n${out}`)), 60_000);
    const check = () => {
      const m = /Console:\s+(http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!.replace(/\/$/, ''));
      }
    };
    proc.stdout!.on('data', check);
    proc.once('exit', (code) => reject(new Error(`serve exited ${code}:\n${out}`)));
  });
  const api = async (method: string, route: string, body?: unknown, token = OP_TOKEN) => {
    const res = await fetch(`${url}/api/v1${route}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return {
    url,
    dir,
    configPath,
    proc,
    output: () => out,
    api,
    stop: async () => {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Chromium with a fresh profile; nothing leaves loopback (no updates, sync or QUIC probes). */
export async function launchBrowser(options: { colorScheme?: 'light' | 'dark' } = {}): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  const profile = mkdtempSync(path.join(os.tmpdir(), 'organism-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 720 },
    colorScheme: options.colorScheme ?? 'light',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Every page error and console error of a page. `allow` lists messages a test provokes on
 * purpose (e.g. the 401 of a wrong token); anything else fails the test.
 */
export function watchErrors(page: Page): { errors: string[]; allow: (re: RegExp) => void; unexpected: () => string[] } {
  const errors: string[] = [];
  const allowed: RegExp[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console.error: ${msg.text()}`);
  });
  return { errors, allow: (re) => allowed.push(re), unexpected: () => errors.filter((e) => !allowed.some((re) => re.test(e))) };
}

/** Polls `fn` until it returns a truthy value (generous deadline; never a fixed sleep). */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Opens the console and signs in with `token`. */
export async function signIn(page: Page, url: string, token: string, at = '/'): Promise<void> {
  await page.goto(`${url}${at}`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/**
 * A test file's server and browser, started once (`ready` runs after both, e.g. to make data),
 * and a page per test whose page and console errors fail it: the lifecycle every console test
 * file repeats.
 */
export function consoleFile(options: { prepare?: (dir: string) => void; ready?: (server: Server) => Promise<void>; setupMs?: number } = {}) {
  let server: Server;
  let browser: { context: BrowserContext; close: () => Promise<void> };
  let page: Page | null = null;
  let watch: ReturnType<typeof watchErrors> | null = null;
  beforeAll(async () => {
    server = await startServer([], options.prepare ? { prepare: options.prepare } : {});
    browser = await launchBrowser();
    await options.ready?.(server);
  }, options.setupMs ?? 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });
  afterEach(async () => {
    const unexpected = watch?.unexpected() ?? [];
    await page?.close();
    page = null;
    watch = null;
    expect(unexpected, 'page errors and console errors').toEqual([]);
  });
  return {
    get server(): Server {
      return server;
    },
    /** Lets the current page log an error the test provokes on purpose (e.g. a 409 answer). */
    allow(re: RegExp): void {
      watch?.allow(re);
    },
    /** A new page, signed in with `token`, at `at`. */
    async open(token: string, at: string): Promise<Page> {
      page = await browser.context.newPage();
      watch = watchErrors(page);
      await signIn(page, server.url, token, at);
      return page;
    },
  };
}
