import { createRequire, register } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Handlers `import { send, type Handler } from 'organism'`. That bare name must reach the
 * organism that runs them, even in a directory where nothing is installed (no node_modules,
 * no registry package of that name: whoever published one would have their code run). So
 * while handlers load, `organism` and `organism/client` resolve to this installation's own
 * entry points: for ES modules through a resolve hook (module.register), for handlers tsx
 * loads as CommonJS (a directory without `"type": "module"`) through the CommonJS resolver.
 * The entries are those of the running code: dist/ when installed, src/ when run from source.
 */
const here = fileURLToPath(import.meta.url);
const ext = path.extname(here); // .js from dist/, .ts from src/
const root = path.dirname(path.dirname(here));

export const SELF_ENTRIES: Readonly<Record<string, string>> = {
  organism: path.join(root, `index${ext}`),
  'organism/client': path.join(root, 'client', `index${ext}`),
};

const HOOK = `
let entries = {};
export function initialize(data) { entries = data.entries; }
export async function resolve(specifier, context, next) {
  const url = entries[specifier];
  return url ? { url, shortCircuit: true } : next(specifier, context);
}
`;

let installed = false;

/** Installs both resolvers once per process (idempotent). */
export function resolveOrganismToSelf(): void {
  if (installed) return;
  installed = true;
  const urls = Object.fromEntries(Object.entries(SELF_ENTRIES).map(([name, file]) => [name, pathToFileURL(file).href]));
  register(`data:text/javascript,${encodeURIComponent(HOOK)}`, { data: { entries: urls } });

  type Resolve = (request: string, ...rest: unknown[]) => string;
  const Module = createRequire(import.meta.url)('node:module') as { _resolveFilename: Resolve };
  const original = Module._resolveFilename;
  Module._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
    const own = SELF_ENTRIES[request];
    return own ?? original.call(this, request, ...rest);
  };
}
