import { PayloadRegistry } from '../payload/registry.js';
import { resolveInjectPayload } from '../payload/inject.js';
import { OrganismError } from '../errors/catalogue.js';
import { acceptedTypes } from './accepted-types.js';
import path from 'node:path';
import { isScalar, LineCounter, parseDocument, visit, type Node } from 'yaml';
import type { PayloadTypeDef } from '../payload/types.js';
import { derivedListenerTimeout, missingProviderKeys, timeoutWarnings, unsetEnvWarnings } from './advice.js';
import { checkCrossReferences, readDocument, type ConfigDraft, type Located } from './document.js';
import { expandEnvironment, redactSecrets } from './env-substitution.js';
import { ConfigInvalidError } from './errors.js';
import { maxConfigBytes, readConfigText } from './file-size.js';
import { yamlSyntaxProblem } from './yaml-errors.js';
import { handlerListener } from '../core/typed-handler.js';
import { exportedPayloadTypes, functionExports, handlerVersion, loadModules, parseHandlerRef, resolveExport, type HandlerRef, type LoadedModule } from './handlers.js';
import { ConfigMessages } from './messages.js';
import { BUILTIN_PAYLOAD_TYPES, buildPayloadDefs, checkPayloadTypes, type TypeOrigin } from './payloads.js';
import { ProblemSink } from './reader.js';
import { BUILTIN_HUMAN, BUILTIN_LLM } from './schema.js';
import { closest } from './suggest.js';
import { guardEntriesOf, guardModulePaths, resolveGuards, resolveRedactFunctions } from './guards.js';
import type { Guard } from '../core/guard.js';
import { findToolExports, resolveAgentTools, toolModulePaths, toolsVersion, type FoundTools } from './tools.js';
import type { ConfigProblem, ListenerConfig, LoadedOrganism, OrganismConfig, PrivacyConfig, ResolvedListener } from './types.js';

/** Options of `loadOrganism`, `loadOrganismFromString` and `checkOrganism`. */
export interface LoadOptions {
  /** Where `${VAR}` substitutions, `api_key_env` and `token_env` are looked up (default: process.env). */
  readonly env?: NodeJS.ProcessEnv;
}

/** Loads and validates an organism.yaml; throws `ConfigInvalidError` listing every problem. */
export async function loadOrganism(configPath: string, options: LoadOptions = {}): Promise<LoadedOrganism> {
  const fileProblem = (message: string) => new ConfigInvalidError([{ file: configPath, line: null, column: null, keyPath: '', message }]);
  const max = maxConfigBytes();
  if (typeof max !== 'number') throw fileProblem(max.error);
  let read: Awaited<ReturnType<typeof readConfigText>>;
  try {
    read = await readConfigText(configPath, max);
  } catch (err) {
    throw fileProblem(ConfigMessages.cannotRead(err instanceof Error ? err.message : String(err)));
  }
  if ('error' in read) throw fileProblem(read.error);
  return loadOrganismFromString(read.text, configPath, options);
}

/**
 * Loads a config to run it (serve, run, reload): also refuses one whose agents need a provider
 * key that is unset, rather than sending requests without Authorization.
 */
export async function loadOrganismToRun(configPath: string, options: LoadOptions = {}): Promise<LoadedOrganism> {
  const loaded = await loadOrganism(configPath, options);
  if (loaded.missingKeys && loaded.missingKeys.length > 0) throw new ConfigInvalidError(loaded.missingKeys);
  return loaded;
}

/** Every problem of a config file; empty when it is valid (handler modules are loaded to check them). */
export async function checkOrganism(configPath: string, options: LoadOptions = {}): Promise<ConfigProblem[]> {
  return (await checkOrganismReport(configPath, options)).problems;
}

/** Problems (the config does not load) and warnings (it loads, but something will not work as meant). */
export async function checkOrganismReport(configPath: string, options: LoadOptions = {}): Promise<{ problems: ConfigProblem[]; warnings: ConfigProblem[] }> {
  try {
    const loaded = await loadOrganism(configPath, options);
    return { problems: [], warnings: [...(loaded.warnings ?? [])] };
  } catch (err) {
    if (err instanceof ConfigInvalidError) return { problems: [...err.problems], warnings: [] };
    throw err;
  }
}

/**
 * Loads a config from text. `virtualPath` names the file in problems and anchors relative
 * handler paths (its directory need not contain a real config file).
 */
export async function loadOrganismFromString(yamlText: string, virtualPath: string, options: LoadOptions = {}): Promise<LoadedOrganism> {
  const lines = new LineCounter();
  const sink = new ProblemSink(virtualPath, lines);
  const doc = parseDocument(yamlText, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    // A broken structure makes further checks misleading: report the syntax alone, and only
    // its first error (one mis-indented line makes the parser report a cascade).
    const first = yamlSyntaxProblem(yamlText, doc.errors, lines);
    sink.addAt(first.line, first.column, '', first.message);
    throw new ConfigInvalidError(sink.problems);
  }
  // Aliases are refused before anything reads the tree (see firstAlias).
  const alias = firstAlias(doc);
  if (alias) {
    const pos = alias.offset === null ? null : lines.linePos(alias.offset);
    sink.addAt(pos?.line ?? null, pos?.col ?? null, '', ConfigMessages.yamlAlias(alias.source, alias.more));
    throw new ConfigInvalidError(sink.problems);
  }
  const env = options.env ?? process.env;
  const root = (doc.contents as Node | null) ?? null;
  // `${VAR}` values are expanded first: what is validated and run is the expanded text.
  const substituted = expandEnvironment(sink, root, env);
  const redacted = (problems: readonly ConfigProblem[]) => withoutSecrets(problems, substituted.secretValues);
  const envProblems = sink.problems.length;
  const read = readDocument(sink, root);
  if (!read) throw new ConfigInvalidError(redacted(sink.problems));
  const { draft, explicitTimeout } = withDerivedTimeouts(read);
  checkCrossReferences(sink, draft);

  const baseDir = path.dirname(path.resolve(virtualPath));
  const refs = draft.listeners.map((l) => readHandlerRef(l));
  const handlerModules = refs.flatMap((r) => (r?.kind === 'module' ? [r.modulePath] : []));
  const listenerGuards = draft.listeners.map((l) => guardEntriesOf(l.at));
  const guardRefs = [...draft.guards, ...listenerGuards.flat()].flatMap((e) => (e.config.kind === 'module' ? [e.config.use] : []));
  const guardModules = guardModulePaths([...guardRefs, ...draft.redactFunctions.map((f) => f.use)]);
  const modules = await loadModules(baseDir, [...new Set([...handlerModules, ...toolModulePaths(draft.listeners), ...guardModules])]);
  reportBrokenModules(draft.listeners, refs, modules);
  const resolved = draft.listeners.map((l, i) => resolveListener(l, refs[i] ?? null, modules));
  const tools = findToolExports(draft.listeners, modules, new Set(handlerModules));
  const payloadTypes = collectPayloadTypes(sink, draft, refs, modules, tools.types);
  checkListenerPayloads(draft, payloadTypes);
  if (sink.problems.length === 0) checkSchedulePayloads(draft, payloadTypes);
  const listeners = resolved.map((r, i) =>
    r && draft.listeners[i] ? withGuards(withTools(r, draft.listeners[i], tools, payloadTypes), resolveGuards(sink, listenerGuards[i] ?? [], modules)) : r,
  );
  const guards = resolveGuards(sink, draft.guards, modules);
  const redactFunctions = resolveRedactFunctions(sink, draft.redactFunctions, modules);

  if (sink.problems.length > 0) throw new ConfigInvalidError(redacted(sortProblems(oncePerSubstitution(sink.problems, envProblems))));
  const warnings = new ProblemSink(virtualPath, lines);
  timeoutWarnings(warnings, draft, explicitTimeout);
  unsetEnvWarnings(warnings, draft, env);
  const missing = new ProblemSink(virtualPath, lines);
  missingProviderKeys(missing, draft, env);
  const config = buildConfig(
    draft,
    payloadTypes.filter((t) => t.fromYaml).map((t) => t.def),
  );
  return {
    warnings: redacted(sortProblems(warnings.problems)),
    missingKeys: redacted(missing.problems),
    path: path.resolve(virtualPath),
    config: substituted.secretVariables.length > 0 ? { ...config, secretVariables: substituted.secretVariables } : config,
    listeners: listeners.filter((l): l is ResolvedListener => l !== null),
    payloadTypes: payloadTypes.map((t) => t.def),
    sources: [path.resolve(virtualPath), ...new Set([...modules.values()].flatMap((m) => m.files))],
    ...(guards.length > 0 ? { guards } : {}),
    ...(redactFunctions.length > 0 ? { redactFunctions } : {}),
  };
}

/** Problems with the value of every secret variable substituted into the file replaced by `[redacted]`. */
function withoutSecrets(problems: readonly ConfigProblem[], secrets: readonly string[]): ConfigProblem[] {
  return secrets.length === 0 ? [...problems] : problems.map((p) => ({ ...p, message: redactSecrets(p.message, secrets) }));
}

/**
 * A value whose substitution failed keeps its `${...}` text, which its key then refuses too
 * (`expected a positive integer`): only the substitution's problem is kept for that key.
 */
function oncePerSubstitution(problems: readonly ConfigProblem[], envProblems: number): ConfigProblem[] {
  const failed = new Set(problems.slice(0, envProblems).map((p) => p.keyPath));
  return problems.filter((p, i) => i < envProblems || !failed.has(p.keyPath));
}

/**
 * A listener without its own \`timeout_seconds\` gets one long enough for its model's providers
 * (see derivedListenerTimeout); the ones that set it are returned to be checked.
 */
function withDerivedTimeouts(read: ConfigDraft): { draft: ConfigDraft; explicitTimeout: Set<Located<ListenerConfig>> } {
  const explicitTimeout = new Set<Located<ListenerConfig>>();
  const providers = read.providers.map((p) => p.value);
  const listeners = read.listeners.map((l) => {
    if (l.at.has('timeout_seconds')) {
      // A human listener's own timeout is its asks' (config.human), not a handler's.
      if (l.value.human === undefined) explicitTimeout.add(l);
      return l;
    }
    return { value: { ...l.value, timeoutSeconds: derivedListenerTimeout(providers, l.value.model) }, at: l.at };
  });
  return { draft: { ...read, listeners }, explicitTimeout };
}

/**
 * The first alias (`*name`) of a document, and how many follow. None of the configuration's
 * keys needs one, and a few nested aliases stand for billions of values to whatever expands them.
 */
function firstAlias(doc: ReturnType<typeof parseDocument>): { source: string; offset: number | null; more: number } | null {
  const found: Array<{ source: string; offset: number | null }> = [];
  visit(doc, {
    Alias(_key, node) {
      found.push({ source: `*${node.source}`, offset: node.range?.[0] ?? null });
    },
  });
  return found[0] ? { ...found[0], more: found.length - 1 } : null;
}

function readHandlerRef(l: Located<ListenerConfig>): HandlerRef | null {
  if (l.value.handlerRef === '') return null;
  const ref = parseHandlerRef(l.value.handlerRef);
  if ('error' in ref) {
    l.at.problem('handler', ref.error);
    return null;
  }
  return ref;
}

/**
 * A handler module that is missing or fails to load, reported once, at the first listener
 * naming it, with the names of all the listeners that do (not once per listener).
 */
function reportBrokenModules(listeners: readonly Located<ListenerConfig>[], refs: readonly (HandlerRef | null)[], modules: ReadonlyMap<string, LoadedModule>): void {
  const users = new Map<string, { first: Located<ListenerConfig>; names: string[] }>();
  refs.forEach((ref, i) => {
    const l = listeners[i];
    if (ref?.kind !== 'module' || !l || modules.get(ref.modulePath)?.ok !== false) return;
    const entry = users.get(ref.modulePath) ?? { first: l, names: [] };
    entry.names.push(l.value.name);
    users.set(ref.modulePath, entry);
  });
  for (const [modulePath, { first, names }] of users) {
    const mod = modules.get(modulePath);
    if (!mod || mod.ok) continue;
    first.at.problem('handler', mod.notFound ? ConfigMessages.moduleNotFound(modulePath, mod.resolved, names) : ConfigMessages.moduleFailed(modulePath, mod.reason, names));
  }
}

function resolveListener(l: Located<ListenerConfig>, ref: HandlerRef | null, modules: ReadonlyMap<string, LoadedModule>): ResolvedListener | null {
  if (ref === null) return null;
  if (ref.kind === 'builtin') return { config: l.value, handler: null, handlerVersion: ref.name === 'human' ? BUILTIN_HUMAN : BUILTIN_LLM };
  // A remote A2A agent: the organism makes its handler (it needs the event bus for live updates).
  if (ref.kind === 'a2a') return { config: l.value, handler: null, handlerVersion: `a2a:${ref.url}` };
  const mod = modules.get(ref.modulePath);
  if (!mod) return null;
  if (!mod.ok) return null; // reported once for all its listeners (reportBrokenModules)
  const found = resolveExport(mod, ref.modulePath, ref.exportName);
  if ('missing' in found) {
    const functions = functionExports(mod);
    l.at.problem('handler', ConfigMessages.exportNotFound(ref.modulePath, ref.exportName, closest(ref.exportName, functions), functions));
    return null;
  }
  if ('error' in found) {
    l.at.problem('handler', found.error);
    return null;
  }
  const declaredFor = handlerListener(found.handler);
  if (declaredFor !== undefined && declaredFor !== l.value.name) {
    l.at.problem('handler', ConfigMessages.handlerForOtherListener(ref.modulePath, ref.exportName, declaredFor, l.value.name));
    return null;
  }
  return { config: l.value, handler: found.handler, handlerVersion: handlerVersion(mod, ref.exportName) };
}

/** An LLM agent with its code tools, ready to run; its handler version changes with their code. */
function withTools(r: ResolvedListener, l: Located<ListenerConfig>, tools: FoundTools, types: readonly TypeOrigin[]): ResolvedListener {
  const found = tools.byListener.get(l);
  if (!found || found.length === 0) return r;
  const known = [...types.map((t) => t.def.name), ...BUILTIN_PAYLOAD_TYPES];
  const codeTools = resolveAgentTools(l, found, (name) => types.find((t) => t.def.name === name)?.def, known);
  return { ...r, handlerVersion: `${r.handlerVersion}+${toolsVersion(found)}`, tools: codeTools };
}

function hasPrivacy(p: PrivacyConfig): boolean {
  return p.redact.length > 0 || p.patterns.length > 0 || p.functions.length > 0 || p.redactPayloads;
}

/** A listener with its guardrails (none: as it was). */
function withGuards(r: ResolvedListener, guards: readonly Guard[]): ResolvedListener {
  return guards.length > 0 ? { ...r, guards } : r;
}

/** YAML types first, then each module's exported types (located at the first handler using it), then those of the agents' tools. */
function collectPayloadTypes(
  sink: ProblemSink,
  draft: ConfigDraft,
  refs: readonly (HandlerRef | null)[],
  modules: ReadonlyMap<string, LoadedModule>,
  toolTypes: FoundTools['types'],
): TypeOrigin[] {
  const source = path.basename(sink.file);
  const origins: TypeOrigin[] = buildPayloadDefs(draft.payloads).map((def, i) => ({
    def,
    fromYaml: true,
    source,
    node: draft.payloads[i]?.node ?? null,
    path: draft.payloads[i]?.path ?? 'payloads',
  }));
  const scanned = new Set<string>();
  refs.forEach((ref, i) => {
    if (ref?.kind !== 'module' || scanned.has(ref.modulePath)) return;
    scanned.add(ref.modulePath);
    const mod = modules.get(ref.modulePath);
    const at = draft.listeners[i]?.at;
    if (!mod || !at) return;
    for (const def of exportedPayloadTypes(mod)) {
      origins.push({ def, fromYaml: false, source: ref.modulePath, node: at.nodeFor('handler'), path: at.pathOf('handler') });
    }
  });
  for (const t of toolTypes) origins.push({ def: t.def, fromYaml: false, source: t.source, node: t.node, path: t.path });
  checkPayloadTypes(sink, draft.payloads, origins);
  // Keep one definition per name (duplicates were reported above).
  const byName = new Map<string, TypeOrigin>();
  for (const o of origins) {
    if (!byName.has(o.def.name) && !BUILTIN_PAYLOAD_TYPES.includes(o.def.name)) byName.set(o.def.name, o);
  }
  return [...byName.values()];
}

function checkListenerPayloads(draft: ConfigDraft, types: readonly TypeOrigin[]): void {
  const known = [...types.map((t) => t.def.name), ...BUILTIN_PAYLOAD_TYPES];
  for (const { value: l, at } of draft.listeners) {
    if (!l.payloadTypes) {
      if (l.payload !== '' && !known.includes(l.payload)) at.problem('payload', ConfigMessages.unknownPayloadType(l.payload, closest(l.payload, known), known));
      continue;
    }
    // `payload: [A, B]`: each unknown name at its own item (`listeners[0].payload[1]`).
    for (const item of at.list('payload', false) ?? []) {
      const name = isScalar(item.node) ? item.node.value : undefined;
      if (typeof name === 'string' && !known.includes(name)) at.sink.add(item.node, item.path, ConfigMessages.unknownPayloadType(name, closest(name, known), known));
    }
  }
}

/** Each schedule's payload fits its target listener, as an inject of it would be checked (reported at `schedules[i].payload`). */
function checkSchedulePayloads(draft: ConfigDraft, types: readonly TypeOrigin[]): void {
  if (draft.schedules.length === 0) return;
  const registry = new PayloadRegistry(types.map((t) => t.def));
  for (const { value: s, at } of draft.schedules) {
    const target = draft.listeners.find((l) => l.value.name === s.to)?.value;
    if (!target) continue;
    const accepted = acceptedTypes(target).flatMap((name) => registry.get(name) ?? []);
    try {
      resolveInjectPayload(s.payload, accepted, registry, s.to);
    } catch (err) {
      if (!(err instanceof OrganismError)) throw err;
      at.problem('payload', ConfigMessages.schedulePayloadInvalid(s.to, err.detail));
    }
  }
}

function sortProblems(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}

function buildConfig(draft: ConfigDraft, yamlPayloads: readonly PayloadTypeDef[]): OrganismConfig {
  return {
    name: draft.name,
    maxTokensPerThread: draft.maxTokensPerThread,
    maxConcurrentHandlers: draft.maxConcurrentHandlers,
    maxConcurrentPerAgent: draft.maxConcurrentPerAgent,
    maxHops: draft.maxHops,
    maxQueue: draft.maxQueue,
    llm: {
      providers: draft.providers.map((p) => p.value),
      pricing: draft.pricing,
      maxReplyBytes: draft.maxReplyBytes,
      maxMessagesPerReply: draft.maxMessagesPerReply,
      record: draft.llmRecord,
    },
    mcpServers: draft.mcpServers.map((m) => m.value),
    listeners: draft.listeners.map((l) => l.value),
    payloads: yamlPayloads,
    auth: { tokens: draft.tokens.map((t) => t.value) },
    journal: draft.journal,
    metrics: draft.metrics,
    telemetry: draft.telemetry,
    ...(draft.guards.length > 0 ? { guards: draft.guards.map((g) => g.config) } : {}),
    ...(hasPrivacy(draft.privacy) ? { privacy: draft.privacy } : {}),
    loopGuard: draft.loopGuard,
    ...(draft.schedules.length > 0 ? { schedules: draft.schedules.map((x) => x.value) } : {}),
    ...(draft.webhooks.length > 0 ? { webhooks: draft.webhooks.map((x) => x.value) } : {}),
  };
}
