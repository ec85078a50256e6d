import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadOrganism } from '../config/index.js';
import { parseHandlerRef } from '../config/handlers.js';
import { SELF_ENTRIES } from '../config/self-reference.js';
import { generateTypeDeclarations, TYPES_FILE } from '../config/type-declarations.js';
import type { LoadedOrganism } from '../config/types.js';
import { resolveConfigPath } from './config-path.js';
import { ExitCode } from './exit-codes.js';

/** Where the declarations of the organism at `configPath` go: organism-env.d.ts beside it. */
export function typesFileFor(configPath: string): string {
  return path.join(path.dirname(configPath), TYPES_FILE);
}

/**
 * True when `check` and `serve --watch` keep the declarations of this organism up to date: the
 * file exists already, or a tsconfig.json sits beside organism.yaml (a TypeScript project).
 * Elsewhere they write nothing (`organism types` always does).
 */
export function keepsTypes(configPath: string): boolean {
  const dir = path.dirname(configPath);
  return existsSync(path.join(dir, TYPES_FILE)) || existsSync(path.join(dir, 'tsconfig.json'));
}

/** Writes the declarations of a loaded organism; only when their text changed (a watcher on the directory sees no write otherwise). */
export function writeTypes(loaded: LoadedOrganism, file = typesFileFor(loaded.path ?? path.resolve('organism.yaml'))): { file: string; changed: boolean } {
  const text = generateTypeDeclarations({ listeners: loaded.config.listeners, payloadTypes: loaded.payloadTypes }, loaded.path ? path.basename(loaded.path) : 'organism.yaml');
  const before = existsSync(file) ? readFileSync(file, 'utf8') : null;
  if (before === text) return { file, changed: false };
  writeFileSync(file, text);
  return { file, changed: true };
}

/** `organism types [config] [--out file]`: writes the declaration file; a config that does not load fails as in `check`. */
export async function typesCommand(configArg: string | undefined, options: { out?: string } = {}): Promise<number> {
  const { path: configPath, isDemo } = resolveConfigPath(configArg);
  if (isDemo) {
    process.stderr.write('organism types: no organism.yaml here; name one (organism types path/to/organism.yaml)\n');
    return ExitCode.USAGE;
  }
  const loaded = await loadOrganism(configPath);
  const { file, changed } = writeTypes(loaded, options.out ? path.resolve(options.out) : undefined);
  process.stdout.write(`${displayPath(file)}: ${changed ? 'written' : 'up to date'} (${loaded.config.listeners.length} listeners, ${loaded.payloadTypes.length} payload types)\n`);
  return ExitCode.OK;
}

/** One compiler error, as `tsc` prints it. */
export interface TypeProblem {
  readonly file: string | null;
  readonly line: number | null;
  readonly column: number | null;
  /** `TS2345: Argument of type ...` */
  readonly message: string;
}

export type TypeCheckOutcome =
  | { readonly checked: true; readonly files: readonly string[]; readonly problems: readonly TypeProblem[] }
  | { readonly checked: false; readonly reason: string };

type Ts = typeof import('typescript');

/** The project's own TypeScript (the version its `tsc` runs), or null when it has none. */
async function projectTypescript(dir: string): Promise<Ts | null> {
  let resolved: string;
  try {
    resolved = createRequire(path.join(dir, 'package.json')).resolve('typescript');
  } catch {
    return null;
  }
  const mod = (await import(pathToFileURL(resolved).href)) as Ts & { default?: Ts };
  return mod.default ?? mod;
}

/** The handler and code tool modules organism.yaml names, as absolute paths. */
function moduleFiles(loaded: LoadedOrganism, dir: string): string[] {
  const refs = loaded.config.listeners.flatMap((l) => [l.handlerRef, ...(l.tools ?? []).map((t) => t.use)]);
  const files = new Set<string>();
  for (const ref of refs) {
    const parsed = parseHandlerRef(ref);
    if ('kind' in parsed && parsed.kind === 'module') files.add(path.resolve(dir, parsed.modulePath));
  }
  return [...files].filter((f) => existsSync(f)).sort();
}

/**
 * Type-checks the handler modules of a loaded organism with its declarations, with the
 * project's own TypeScript and tsconfig.json (the nearest one up from organism.yaml), as its
 * `tsc` would: a misspelt peer or a wrong field type in a `defineHandler` handler is an error
 * here. When the project has no `typescript` installed nothing is checked (the reason says so).
 * Where the project cannot resolve `organism` itself (nothing installed), it resolves to this
 * installation, as it does when the handlers run.
 */
export async function checkHandlerTypes(loaded: LoadedOrganism, typesFile: string): Promise<TypeCheckOutcome> {
  const dir = path.dirname(loaded.path ?? typesFile);
  const ts = await projectTypescript(dir);
  if (!ts) return { checked: false, reason: `typescript is not installed in ${displayPath(dir)} (npm install --save-dev typescript)` };
  const files = moduleFiles(loaded, dir);
  const tsconfig = ts.findConfigFile(dir, (f) => ts.sys.fileExists(f), 'tsconfig.json');
  let options: import('typescript').CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
  };
  if (tsconfig) {
    const parsed = ts.getParsedCommandLineOfConfigFile(tsconfig, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
    if (parsed) options = parsed.options;
  }
  options = { ...options, noEmit: true };
  const probe = ts.resolveModuleName('organism', path.join(dir, '__organism_probe.ts'), options, ts.sys);
  if (!probe.resolvedModule) {
    const self = (file: string) => (file.endsWith('.js') ? file.replace(/\.js$/, '.d.ts') : file);
    options = { ...options, paths: { ...options.paths, organism: [self(SELF_ENTRIES['organism'] as string)], 'organism/client': [self(SELF_ENTRIES['organism/client'] as string)] } };
  }
  // JavaScript modules only where the project checks JavaScript (else tsc itself would refuse them).
  const checked = files.filter((f) => /\.[mc]?ts$/.test(f) || (options.allowJs === true && options.checkJs === true));
  const program = ts.createProgram({ rootNames: [...checked, typesFile], options });
  const own = (file: string) => !file.includes(`${path.sep}node_modules${path.sep}`) && !isInstallationFile(file);
  const problems = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.category === ts.DiagnosticCategory.Error && (d.file === undefined || own(d.file.fileName)))
    .map((d): TypeProblem => {
      const message = `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n  ')}`;
      if (!d.file || d.start === undefined) return { file: d.file?.fileName ?? null, line: null, column: null, message };
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      return { file: d.file.fileName, line: line + 1, column: character + 1, message };
    });
  return { checked: true, files: checked, problems };
}

/** organism's own sources or build (reached through `organism` when nothing is installed): not the project's to fix. */
function isInstallationFile(file: string): boolean {
  const root = path.dirname(path.dirname(SELF_ENTRIES['organism'] as string));
  const normalized = path.resolve(file);
  return normalized.startsWith(path.join(root, 'src') + path.sep) || normalized.startsWith(path.join(root, 'dist') + path.sep);
}

export function formatTypeProblem(p: TypeProblem): string {
  const where = p.file === null ? '' : p.line === null ? `${displayPath(p.file)}: ` : `${displayPath(p.file)}:${p.line}:${p.column}: `;
  return `${where}${p.message}`;
}

/** Relative to the working directory when inside it, as tsc prints paths. */
function displayPath(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? file : rel;
}
