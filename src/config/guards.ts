import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { isGuardDef, type Guard, type RedactFunction } from '../core/guard.js';
import { forbiddenGuard, maxInputBytesGuard, piiGuard } from '../llm/guards.js';
import { builtinDetector, DETECTOR_NAMES, isDetectorName, patternDetector, Redactor, type DetectorName } from '../util/pii.js';
import { parseHandlerRef, type LoadedModule } from './handlers.js';
import { ConfigMessages, Expected } from './messages.js';
import { describeNode, MapReader, ProblemSink, type SeqItem } from './reader.js';
import { closest } from './suggest.js';
import type { GuardConfig, PrivacyConfig } from './types.js';

/**
 * `guards:` (on a listener, and at the top level for every LLM call) and `privacy:` (what is
 * redacted before anything is recorded or emitted): reading the entries, then resolving the
 * developer's functions in the loaded modules. See docs/safety.md.
 */

export const GUARD_KINDS = ['use', 'max_input_bytes', 'forbidden', 'pii'] as const;
const GUARD_KEYS = [...GUARD_KINDS, 'name'] as const;
const PII_KEYS = ['detect', 'action'] as const;
const PII_ACTIONS = ['block', 'redact'] as const;
const PRIVACY_PATTERN_KEYS = ['pattern', 'use'] as const;

/** One `guards` entry as read, with its place (for problems found once modules load). */
export interface GuardEntry {
  readonly config: GuardConfig;
  readonly node: Node;
  readonly path: string;
}

/** One `privacy.redact` entry naming a module function, with its place. */
export interface RedactFunctionEntry {
  readonly use: string;
  readonly node: Node;
  readonly path: string;
}

function validPattern(sink: ProblemSink, node: Node, path: string, source: string): boolean {
  try {
    new RegExp(source, 'u');
    return true;
  } catch (err) {
    sink.add(node, path, ConfigMessages.badPattern(source, err instanceof Error ? err.message : String(err)));
    return false;
  }
}

function moduleRef(sink: ProblemSink, node: Node, path: string, use: string, what: string): boolean {
  const ref = parseHandlerRef(use);
  if ('error' in ref || ref.kind !== 'module') {
    sink.add(node, path, ConfigMessages.malformedModuleRef(what, use));
    return false;
  }
  return true;
}

function detectorList(sink: ProblemSink, items: readonly SeqItem[]): DetectorName[] {
  const out: DetectorName[] = [];
  for (const item of items) {
    const v = isScalar(item.node) ? item.node.value : undefined;
    if (typeof v === 'string' && isDetectorName(v)) out.push(v);
    else sink.add(item.node, item.path, ConfigMessages.unknownDetector(typeof v === 'string' ? v : describeNode(item.node), typeof v === 'string' ? closest(v, DETECTOR_NAMES) : null));
  }
  return out;
}

function readGuardEntry(sink: ProblemSink, item: SeqItem): GuardEntry | null {
  if (isScalar(item.node) && typeof item.node.value === 'string') {
    const use = item.node.value;
    if (!moduleRef(sink, item.node, item.path, use, 'guard')) return null;
    return { config: { kind: 'module', use, name: null }, node: item.node, path: item.path };
  }
  if (!isMap(item.node)) {
    sink.add(item.node, item.path, ConfigMessages.wrongType(Expected.guardEntry, describeNode(item.node)));
    return null;
  }
  const r = new MapReader(sink, item.node, item.path, GUARD_KEYS);
  const kinds = GUARD_KINDS.filter((k) => r.has(k));
  if (kinds.length !== 1) {
    sink.add(item.node, item.path, ConfigMessages.guardKind(kinds));
    return null;
  }
  const kind = kinds[0]!;
  const name = r.string('name');
  const at = { node: r.nodeFor(kind), path: r.pathOf(kind) };
  if (kind !== 'use' && r.has('name')) r.problem('name', ConfigMessages.guardNameOnlyForUse());
  switch (kind) {
    case 'use': {
      const use = r.string('use', true);
      if (use === null || !moduleRef(sink, at.node, at.path, use, 'guard')) return null;
      return { config: { kind: 'module', use, name }, ...at };
    }
    case 'max_input_bytes': {
      const bytes = r.integer('max_input_bytes', -1, 1);
      return bytes > 0 ? { config: { kind: 'max_input_bytes', bytes }, ...at } : null;
    }
    case 'forbidden': {
      const items = r.list('forbidden', true);
      if (items === null) return null;
      const patterns: string[] = [];
      for (const p of items) {
        const v = isScalar(p.node) ? p.node.value : undefined;
        if (typeof v !== 'string') sink.add(p.node, p.path, ConfigMessages.wrongType(Expected.string, describeNode(p.node)));
        else if (validPattern(sink, p.node, p.path, v)) patterns.push(v);
      }
      if (items.length === 0) sink.add(at.node, at.path, ConfigMessages.emptyForbidden());
      return patterns.length > 0 ? { config: { kind: 'forbidden', patterns }, ...at } : null;
    }
    case 'pii': {
      const node = r.valueNode('pii')!;
      if (isSeq(node)) {
        const detect = detectorList(sink, r.list('pii', true) ?? []);
        return detect.length > 0 ? { config: { kind: 'pii', detect, action: 'block' }, ...at } : null;
      }
      const pii = r.map('pii', PII_KEYS);
      if (!pii) return null;
      const detect = pii.has('detect') ? detectorList(sink, pii.list('detect', true) ?? []) : [...DETECTOR_NAMES];
      const action = pii.enumeration('action', PII_ACTIONS, false) ?? 'block';
      return detect.length > 0 ? { config: { kind: 'pii', detect, action }, ...at } : null;
    }
  }
}

/** Reads `guards` of a listener or of the top level, reporting every malformed entry. */
export function readGuardEntries(r: MapReader): GuardEntry[] {
  return (r.list('guards', false) ?? []).flatMap((item) => readGuardEntry(r.sink, item) ?? []);
}

/** The entries again, without reporting (readGuardEntries did). */
export function guardEntriesOf(r: MapReader): GuardEntry[] {
  const quiet = new ProblemSink('', null);
  return r.items('guards').flatMap((item) => readGuardEntry(quiet, item) ?? []);
}

/** `privacy: {redact: [...], redact_payloads}`: the config and the module functions to resolve. */
export function readPrivacy(r: MapReader | null): { config: PrivacyConfig; functions: RedactFunctionEntry[] } {
  const detectors: DetectorName[] = [];
  const patterns: string[] = [];
  const functions: RedactFunctionEntry[] = [];
  for (const item of r?.list('redact', false) ?? []) {
    if (isScalar(item.node) && typeof item.node.value === 'string') {
      const v = item.node.value;
      if (isDetectorName(v)) detectors.push(v);
      else if (v.includes('#')) {
        if (moduleRef(r!.sink, item.node, item.path, v, 'redaction function')) functions.push({ use: v, node: item.node, path: item.path });
      } else r!.sink.add(item.node, item.path, ConfigMessages.unknownDetector(v, closest(v, DETECTOR_NAMES)));
      continue;
    }
    const m = MapReader.open(r!.sink, item.node, item.path, PRIVACY_PATTERN_KEYS);
    if (!m) continue;
    if (m.has('pattern') === m.has('use')) {
      r!.sink.add(item.node, item.path, ConfigMessages.redactEntryKind());
      continue;
    }
    const pattern = m.string('pattern');
    if (pattern !== null && validPattern(r!.sink, m.nodeFor('pattern'), m.pathOf('pattern'), pattern)) patterns.push(pattern);
    const use = m.string('use');
    if (use !== null && moduleRef(r!.sink, m.nodeFor('use'), m.pathOf('use'), use, 'redaction function')) functions.push({ use, node: m.nodeFor('use'), path: m.pathOf('use') });
  }
  return {
    config: { redact: [...new Set(detectors)], patterns, functions: functions.map((f) => f.use), redactPayloads: r?.boolean('redact_payloads', false) ?? false },
    functions,
  };
}

/** Module paths the guards and redaction functions come from (loaded with the handler modules). */
export function guardModulePaths(refs: readonly string[]): string[] {
  return refs.flatMap((use) => {
    const ref = parseHandlerRef(use);
    return 'error' in ref || ref.kind !== 'module' ? [] : [ref.modulePath];
  });
}

function findExport(sink: ProblemSink, node: Node, path: string, use: string, modules: ReadonlyMap<string, LoadedModule>, what: string): unknown {
  const ref = parseHandlerRef(use);
  if ('error' in ref || ref.kind !== 'module') return undefined;
  const mod = modules.get(ref.modulePath);
  if (!mod) return undefined;
  if (!mod.ok) {
    sink.add(node, path, mod.notFound ? ConfigMessages.guardModuleNotFound(what, ref.modulePath, mod.resolved) : ConfigMessages.guardModuleFailed(what, ref.modulePath, mod.reason));
    return undefined;
  }
  if (!Object.hasOwn(mod.exports, ref.exportName)) {
    const candidates = Object.keys(mod.exports);
    sink.add(node, path, ConfigMessages.guardExportNotFound(what, ref.modulePath, ref.exportName, closest(ref.exportName, candidates), candidates));
    return undefined;
  }
  return mod.exports[ref.exportName];
}

/** The guards of `entries`, ready to run; a module export that is missing or not a guard is reported. */
export function resolveGuards(sink: ProblemSink, entries: readonly GuardEntry[], modules: ReadonlyMap<string, LoadedModule>): Guard[] {
  const guards: Guard[] = [];
  for (const { config, node, path } of entries) {
    switch (config.kind) {
      case 'max_input_bytes':
        guards.push(maxInputBytesGuard(config.bytes));
        break;
      case 'forbidden':
        guards.push(forbiddenGuard(config.patterns));
        break;
      case 'pii':
        guards.push(piiGuard(config.detect, config.action));
        break;
      case 'module': {
        const value = findExport(sink, node, path, config.use, modules, 'guard');
        if (value === undefined) break;
        if (!isGuardDef(value)) {
          sink.add(node, path, ConfigMessages.notAGuard(config.use, describeValue(value)));
          break;
        }
        const exportName = config.use.slice(config.use.lastIndexOf('#') + 1);
        guards.push({ ...value, name: config.name ?? value.name ?? exportName });
        break;
      }
    }
  }
  return guards;
}

/** The redaction functions of `privacy.redact`, resolved; an export that is missing or not a function is reported. */
export function resolveRedactFunctions(sink: ProblemSink, entries: readonly RedactFunctionEntry[], modules: ReadonlyMap<string, LoadedModule>): RedactFunction[] {
  const out: RedactFunction[] = [];
  for (const { use, node, path } of entries) {
    const value = findExport(sink, node, path, use, modules, 'redaction function');
    if (value === undefined) continue;
    if (typeof value !== 'function') {
      sink.add(node, path, ConfigMessages.notARedactFunction(use, describeValue(value)));
      continue;
    }
    out.push(value as RedactFunction);
  }
  return out;
}

/** The redactor of `privacy`: its detectors, its patterns, then its functions. */
export function privacyRedactor(privacy: PrivacyConfig | undefined, functions: readonly RedactFunction[] = []): Redactor {
  if (!privacy) return Redactor.NONE;
  const detectors = [...privacy.redact.map(builtinDetector), ...privacy.patterns.map((p) => patternDetector(p))];
  return detectors.length === 0 && functions.length === 0 ? Redactor.NONE : new Redactor(detectors, functions);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'function' ? 'a function' : typeof value;
}
