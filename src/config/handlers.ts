import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tsImport } from 'tsx/esm/api';
import { isPayloadTypeDef } from '../payload/define.js';
import type { PayloadTypeDef } from '../payload/types.js';
import type { Handler } from '../core/handler.js';
import { describeLoadError } from './load-error.js';
import { ConfigMessages } from './messages.js';
import { A2A_HANDLER_PREFIX, BUILTIN_HUMAN, BUILTIN_LLM } from './schema.js';
import { resolveOrganismToSelf } from './self-reference.js';

export type HandlerRef =
  | { readonly kind: 'builtin'; readonly name: 'llm' | 'human' }
  | { readonly kind: 'module'; readonly modulePath: string; readonly exportName: string }
  /** `a2a:https://host/path`: a remote A2A agent (issue 31). */
  | { readonly kind: 'a2a'; readonly url: string };

const MODULE_EXTENSIONS = ['.ts', '.js', '.mts', '.mjs'];
const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Parses `./path/to/module.ts#exportName`, `builtin:llm` or `builtin:human`; returns the problem text when malformed. */
export function parseHandlerRef(ref: string): HandlerRef | { readonly error: string } {
  if (ref === BUILTIN_LLM) return { kind: 'builtin', name: 'llm' };
  if (ref === BUILTIN_HUMAN) return { kind: 'builtin', name: 'human' };
  if (ref.startsWith('builtin:')) return { error: ConfigMessages.unknownBuiltin(ref) };
  if (ref.startsWith(A2A_HANDLER_PREFIX)) {
    const url = remoteA2aUrl(ref);
    return url === null ? { error: ConfigMessages.badA2aHandler(ref) } : { kind: 'a2a', url };
  }
  const hash = ref.lastIndexOf('#');
  const modulePath = hash < 0 ? '' : ref.slice(0, hash);
  const exportName = hash < 0 ? '' : ref.slice(hash + 1);
  const isPath = modulePath.startsWith('./') || modulePath.startsWith('../') || path.isAbsolute(modulePath);
  if (!isPath || !EXPORT_NAME.test(exportName)) return { error: ConfigMessages.malformedHandler(ref) };
  if (!MODULE_EXTENSIONS.includes(path.extname(modulePath))) return { error: ConfigMessages.handlerExtension(ref) };
  return { kind: 'module', modulePath, exportName };
}

/** The http(s) URL of an `a2a:` handler (without a trailing slash), or null when it is not one. */
export function remoteA2aUrl(ref: string): string | null {
  if (!ref.startsWith(A2A_HANDLER_PREFIX)) return null;
  const raw = ref.slice(A2A_HANDLER_PREFIX.length).trim();
  try {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    if (url.username !== '' || url.password !== '') return null;
    return raw.replace(/\/+$/, '');
  } catch {
    return null;
  }
}

/** A handler module after loading: its exports, or why it could not be loaded. */
export type LoadedModule =
  | {
      readonly ok: true;
      readonly resolved: string;
      readonly exports: Readonly<Record<string, unknown>>;
      readonly hash: string;
      readonly files: readonly string[];
    }
  | {
      readonly ok: false;
      readonly resolved: string;
      /** The problem as a handler module's (what a listener's `handler` reports). */
      readonly error: string;
      /** The parts, for other uses of the module (an agent's `tools`): not found, or why it failed to load. */
      readonly notFound: boolean;
      readonly reason: string;
      readonly files: readonly string[];
    };

/**
 * Loads handler modules (.ts or .js) without a build step, through tsx. Each module gets a
 * fresh tsx namespace, so a reload sees edited code instead of Node's module cache. Files
 * the module pulls in are hashed with it, so an edited local import changes its version.
 */
export async function loadModules(baseDir: string, modulePaths: Iterable<string>): Promise<Map<string, LoadedModule>> {
  const unique = [...new Set(modulePaths)];
  const out = new Map<string, LoadedModule>();
  if (unique.length === 0) return out;
  resolveOrganismToSelf();
  // Outside an ES module package, tsx loads local imports as CommonJS, through the shared
  // require cache: forget the organism's own files there so they are read afresh.
  const cache = createRequire(import.meta.url).cache;
  const isLocal = (file: string): boolean => file.startsWith(baseDir + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`);
  for (const file of Object.keys(cache)) if (isLocal(file)) delete cache[file];

  await Promise.all(
    unique.map(async (modulePath) => {
      out.set(modulePath, await loadModule(baseDir, modulePath, () => Object.keys(cache).filter(isLocal)));
    }),
  );
  return out;
}

async function loadModule(baseDir: string, modulePath: string, cachedLocalFiles: () => string[]): Promise<LoadedModule> {
  const resolved = path.resolve(baseDir, modulePath);
  try {
    await readFile(resolved);
  } catch {
    return { ok: false, resolved, error: ConfigMessages.moduleNotFound(modulePath, resolved), notFound: true, reason: '', files: [resolved] };
  }
  const url = pathToFileURL(resolved).href;
  const imported = new Set<string>([url]);
  try {
    const ns = (await tsImport(url, { parentURL: import.meta.url, onImport: (u) => imported.add(u) })) as Record<string, unknown>;
    await importNoticesSettled(imported);
    for (const file of cachedLocalFiles()) imported.add(pathToFileURL(file).href);
    const files = localFiles(imported);
    return { ok: true, resolved, exports: ns, hash: await hashFiles(files), files };
  } catch (err) {
    await importNoticesSettled(imported);
    // The files the import reached, latest first (the failing one is usually the last), then the module.
    const reached = [...imported]
      .filter((u) => u.startsWith('file:') && !u.includes('/node_modules/'))
      .map((u) => fileURLToPath(u.split('?')[0] ?? u))
      .reverse();
    const reason = describeLoadError(err, baseDir, [...new Set(reached)]);
    return { ok: false, resolved, error: ConfigMessages.moduleFailed(modulePath, reason), notFound: false, reason, files: localFiles(imported) };
  }
}

/**
 * Import notices travel over a message port from the loader thread and may arrive after the
 * import itself resolved (later still on a loaded machine): wait until none came for three
 * timer turns in a row (at most 50), so the handler's version does not depend on timing.
 */
async function importNoticesSettled(imported: ReadonlySet<string>): Promise<void> {
  let size = imported.size;
  for (let turn = 0, quiet = 0; quiet < 3 && turn < 50; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (imported.size === size) quiet++;
    else [quiet, size] = [0, imported.size];
  }
}

/** The module and the local files it imports (packages under node_modules excluded), sorted. */
function localFiles(urls: Iterable<string>): string[] {
  const files = [...urls].filter((u) => u.startsWith('file:') && !u.includes('/node_modules/')).map((u) => fileURLToPath(u.split('?')[0] ?? u));
  return [...new Set(files)].sort();
}

/** Hash of the files' paths and contents: the identity of a module's code. */
async function hashFiles(files: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(file).update('\0');
    hash.update(await readFile(file).catch(() => Buffer.alloc(0))).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** Every payload type a module exports (found by brand, whatever the export is called). */
export function exportedPayloadTypes(mod: LoadedModule): PayloadTypeDef[] {
  if (!mod.ok) return [];
  const found: PayloadTypeDef[] = [];
  for (const value of Object.values(mod.exports)) {
    if (isPayloadTypeDef(value) && !found.includes(value)) found.push(value);
  }
  return found;
}

/** Names of a module's exports that could be handlers, for "did you mean" suggestions. */
export function functionExports(mod: LoadedModule): string[] {
  if (!mod.ok) return [];
  return Object.entries(mod.exports)
    .filter(([, v]) => typeof v === 'function')
    .map(([k]) => k);
}

export function resolveExport(mod: LoadedModule & { ok: true }, modulePath: string, exportName: string): { handler: Handler } | { missing: true } | { error: string } {
  if (!Object.hasOwn(mod.exports, exportName)) return { missing: true };
  const value = mod.exports[exportName];
  if (typeof value !== 'function') {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    return { error: ConfigMessages.exportNotFunction(modulePath, exportName, got) };
  }
  return { handler: value as Handler };
}

/** Identity of a handler's code: a reload updates the listener when this changes. */
export function handlerVersion(mod: LoadedModule & { ok: true }, exportName: string): string {
  return `${mod.resolved}#${exportName}@${mod.hash}`;
}
