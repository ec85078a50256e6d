import { isMap, isScalar, type Node } from 'yaml';
import { isToolDef, type CodeTool, type ToolDef, type ToolFunction } from '../agent/code-tool.js';
import { PEER_TOOL_PREFIX, peerToolName, REPLY_TOOL, TOOL_NAME_MAX, toolName } from '../llm/tool-names.js';
import { isPayloadTypeDef } from '../payload/define.js';
import type { PayloadTypeDef } from '../payload/types.js';
import { exportedPayloadTypes, parseHandlerRef, type LoadedModule } from './handlers.js';
import { ConfigMessages, Expected } from './messages.js';
import { describeNode, MapReader, ProblemSink, type SeqItem } from './reader.js';
import { BUILTIN_LLM, Keys } from './schema.js';
import { closest } from './suggest.js';
import type { CodeToolConfig, ListenerConfig, McpServerConfig, ReplyFormat } from './types.js';

/**
 * An LLM agent's `tools:` (code tools): reading the entries, checking their names against the
 * agent's other tools, and resolving them against the loaded modules. Each entry is
 * `./module.ts#export` (a `defineTool` export) or `{use, input, name, description,
 * timeout_seconds}` (`input` naming the payload type of a plain function's arguments).
 */

/** Names providers accept for tools. */
const TOOL_NAME = new RegExp(`^[A-Za-z0-9_-]{1,${TOOL_NAME_MAX}}$`);

/** A listener as read, with its place in the file. */
interface LocatedListener {
  readonly value: ListenerConfig;
  readonly at: MapReader;
}

/** One `tools` item with its place in the file. */
interface ToolEntry {
  readonly config: CodeToolConfig;
  /** The node and key path to point at for `key` (the item itself for the short form). */
  place(key: 'use' | 'input' | 'name'): { readonly node: Node; readonly path: string };
}

/** A module reference of a tool, parsed: where to load it from and the export to take. */
interface ToolRef {
  readonly modulePath: string;
  readonly exportName: string;
}

function parseEntry(sink: ProblemSink, item: SeqItem): ToolEntry | null {
  if (isScalar(item.node) && typeof item.node.value === 'string') {
    const config: CodeToolConfig = { use: item.node.value, input: null, name: null, description: null, timeoutSeconds: null };
    return { config, place: () => ({ node: item.node, path: item.path }) };
  }
  if (!isMap(item.node)) {
    sink.add(item.node, item.path, ConfigMessages.wrongType(Expected.toolEntry, describeNode(item.node)));
    return null;
  }
  const r = new MapReader(sink, item.node, item.path, Keys.codeTool);
  const use = r.string('use', true);
  if (use === null) return null;
  const timeout = r.has('timeout_seconds') ? r.number('timeout_seconds', -1, true) : -1;
  const config: CodeToolConfig = {
    use,
    input: r.string('input'),
    name: r.string('name'),
    description: r.string('description'),
    timeoutSeconds: timeout > 0 ? timeout : null,
  };
  return { config, place: (key) => ({ node: r.nodeFor(key), path: r.pathOf(key) }) };
}

/** Reads a listener's `tools`, reporting every malformed entry. */
export function readToolEntries(r: MapReader): CodeToolConfig[] {
  return (r.list('tools', false) ?? []).flatMap((item) => {
    const entry = parseEntry(r.sink, item);
    return entry ? [entry.config] : [];
  });
}

/** The entries again, with their places, without reporting (readToolEntries did). */
function entriesOf(at: MapReader): ToolEntry[] {
  const quiet = new ProblemSink('', null);
  return at.items('tools').flatMap((item) => parseEntry(quiet, item) ?? []);
}

function parseToolRef(use: string): ToolRef | null {
  const ref = parseHandlerRef(use);
  return 'error' in ref || ref.kind !== 'module' ? null : ref;
}

/** The name the model calls a tool by: its `name`, else its export's name. */
export function codeToolName(tool: CodeToolConfig): string {
  return tool.name ?? parseToolRef(tool.use)?.exportName ?? tool.use;
}

/**
 * Checks an agent's tools against what the document says: only `builtin:llm` agents answering
 * with tool calls have them; each names a module export; each name is valid, unique, and
 * none of the agent's other tools (`reply`, `send_to_*`, `<server>_<tool>` of its MCP servers).
 */
export function checkAgentTools(l: LocatedListener, mcpServers: readonly McpServerConfig[], replyFormat: ReplyFormat): void {
  const { value: listener, at } = l;
  if (!listener.tools || listener.tools.length === 0) return;
  if (listener.handlerRef !== BUILTIN_LLM) {
    at.problem('tools', ConfigMessages.toolsOnlyForLlm());
    return;
  }
  if (replyFormat === 'xml') at.problem('tools', ConfigMessages.toolsNeedToolCalls(listener.name));
  const servers = (listener.mcpServers ?? []).flatMap((name) => mcpServers.filter((s) => s.name === name));
  const seen = new Set<string>();
  for (const entry of entriesOf(at)) {
    const ref = parseToolRef(entry.config.use);
    if (!ref) {
      const { node, path } = entry.place('use');
      at.sink.add(node, path, ConfigMessages.malformedTool(entry.config.use));
      continue;
    }
    const name = entry.config.name ?? ref.exportName;
    const { node, path } = entry.place(entry.config.name !== null ? 'name' : 'use');
    const problem = nameProblem(listener.name, name, servers, seen);
    if (problem) at.sink.add(node, path, problem);
    seen.add(name);
  }
}

/**
 * An agent's `approval:` names its own tools: `reply`, `send_to_<peer>`, its code tools, and
 * `<server>_<tool>` of its MCP servers (any name with a server's prefix when the server lists
 * no `tools`, as those are known only once it runs). An unknown name suggests the closest.
 */
export function checkApproval(l: LocatedListener, mcpServers: readonly McpServerConfig[], replyFormat: ReplyFormat): void {
  const { value: listener, at } = l;
  if (listener.approval === undefined) return;
  if (listener.handlerRef !== BUILTIN_LLM) {
    at.problem('approval', ConfigMessages.approvalOnlyForLlm());
    return;
  }
  if (replyFormat === 'xml') at.problem('approval', ConfigMessages.approvalNeedsToolCalls(listener.name));
  const servers = (listener.mcpServers ?? []).flatMap((name) => mcpServers.filter((s) => s.name === name));
  const known = [
    REPLY_TOOL,
    ...listener.peers.map(peerToolName),
    ...(listener.tools ?? []).map(codeToolName),
    ...servers.flatMap((s) => (s.tools ?? []).map((t) => toolName(`${s.name}_${t}`))),
  ];
  const open = servers.filter((s) => s.tools === null).map((s) => toolName(`${s.name}_`));
  for (const item of at.items('approval')) {
    const name = isScalar(item.node) ? item.node.value : undefined;
    if (typeof name !== 'string' || known.includes(name) || open.some((prefix) => name.startsWith(prefix))) continue;
    at.sink.add(item.node, item.path, ConfigMessages.unknownApprovalTool(listener.name, name, closest(name, known), known));
  }
}

function nameProblem(agent: string, name: string, servers: readonly McpServerConfig[], seen: ReadonlySet<string>): string | null {
  if (!TOOL_NAME.test(name)) return ConfigMessages.invalidToolName(agent, name);
  if (name === REPLY_TOOL || name.startsWith(PEER_TOOL_PREFIX)) return ConfigMessages.toolNameReserved(agent, name);
  for (const server of servers) {
    if (server.tools !== null) {
      const tool = server.tools.find((t) => toolName(`${server.name}_${t}`) === name);
      if (tool !== undefined) return ConfigMessages.toolNameIsMcpTool(agent, name, server.name, tool);
    } else if (name.startsWith(toolName(`${server.name}_`))) {
      return ConfigMessages.toolNameMayBeMcpTool(agent, name, server.name);
    }
  }
  return seen.has(name) ? ConfigMessages.duplicateToolName(agent, name) : null;
}

/** Paths of the modules the agents' tools come from (to load with the handler modules). */
export function toolModulePaths(listeners: readonly LocatedListener[]): string[] {
  return listeners.flatMap((l) => (l.value.handlerRef === BUILTIN_LLM ? (l.value.tools ?? []).flatMap((t) => parseToolRef(t.use)?.modulePath ?? []) : []));
}

/** A tool whose export was found: a `defineTool` tool, or a plain function waiting for its input type. */
interface FoundTool {
  readonly entry: ToolEntry;
  readonly ref: ToolRef;
  readonly found: { readonly def: ToolDef } | { readonly fn: ToolFunction };
  readonly hash: string;
}

/** The tools of every agent, their exports found (or the problems reported), and the payload types their modules bring. */
export interface FoundTools {
  readonly byListener: ReadonlyMap<LocatedListener, readonly FoundTool[]>;
  /** Types the tools' modules export and the input types of `defineTool` tools, each with the tool entry to point at. */
  readonly types: readonly { readonly def: PayloadTypeDef; readonly source: string; readonly node: Node; readonly path: string }[];
}

/**
 * Finds each tool's export in its loaded module. A module that is missing or fails to load is
 * reported once (at its first tool; not at all when a listener's `handler` names it, which
 * reports it already).
 */
export function findToolExports(listeners: readonly LocatedListener[], modules: ReadonlyMap<string, LoadedModule>, handlerModules: ReadonlySet<string>): FoundTools {
  const byListener = new Map<LocatedListener, FoundTool[]>();
  const types: Array<FoundTools['types'][number]> = [];
  const reported = new Set<string>(handlerModules);
  const scanned = new Set<string>();
  for (const l of listeners) {
    if (l.value.handlerRef !== BUILTIN_LLM) continue;
    const found: FoundTool[] = [];
    for (const entry of entriesOf(l.at)) {
      const ref = parseToolRef(entry.config.use);
      const mod = ref ? modules.get(ref.modulePath) : undefined;
      if (!ref || !mod) continue;
      const use = entry.place('use');
      if (!mod.ok) {
        if (!reported.has(ref.modulePath)) {
          reported.add(ref.modulePath);
          const message = mod.notFound
            ? ConfigMessages.toolModuleNotFound(l.value.name, ref.modulePath, mod.resolved)
            : ConfigMessages.toolModuleFailed(l.value.name, ref.modulePath, mod.reason);
          l.at.sink.add(use.node, use.path, message);
        }
        continue;
      }
      if (!scanned.has(ref.modulePath)) {
        scanned.add(ref.modulePath);
        for (const def of exportedPayloadTypes(mod)) types.push({ def, source: ref.modulePath, ...use });
      }
      const value = Object.hasOwn(mod.exports, ref.exportName) ? mod.exports[ref.exportName] : undefined;
      const problem = exportProblem(l.value.name, entry, ref, mod, value);
      if (problem) {
        const at = problem.key === 'use' ? use : entry.place('input');
        l.at.sink.add(at.node, at.path, problem.message);
        continue;
      }
      if (isToolDef(value)) {
        types.push({ def: value.input, source: entry.config.use, ...use });
        found.push({ entry, ref, found: { def: value }, hash: mod.hash });
      } else {
        found.push({ entry, ref, found: { fn: value as ToolFunction }, hash: mod.hash });
      }
    }
    byListener.set(l, found);
  }
  return { byListener, types };
}

function exportProblem(agent: string, entry: ToolEntry, ref: ToolRef, mod: LoadedModule & { ok: true }, value: unknown): { key: 'use' | 'input'; message: string } | null {
  const { use, input } = entry.config;
  if (!Object.hasOwn(mod.exports, ref.exportName)) {
    const candidates = Object.entries(mod.exports)
      .filter(([, v]) => typeof v === 'function' || isToolDef(v))
      .map(([k]) => k);
    return { key: 'use', message: ConfigMessages.toolExportNotFound(agent, ref.modulePath, ref.exportName, closest(ref.exportName, candidates), candidates) };
  }
  if (isToolDef(value)) return input !== null ? { key: 'input', message: ConfigMessages.toolHasInput(agent, use) } : null;
  if (typeof value !== 'function') {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : isPayloadTypeDef(value) ? 'a payload type' : typeof value;
    return { key: 'use', message: ConfigMessages.toolNotFunction(agent, use, got) };
  }
  return input === null ? { key: 'use', message: ConfigMessages.toolNeedsInput(agent, use) } : null;
}

/**
 * The agent's code tools, ready to run: plain functions get the payload type their `input`
 * names (an unknown name is reported, listing the known ones).
 */
export function resolveAgentTools(l: LocatedListener, found: readonly FoundTool[], typeOf: (name: string) => PayloadTypeDef | undefined, known: readonly string[]): CodeTool[] {
  const tools: CodeTool[] = [];
  for (const { entry, ref, found: what } of found) {
    const config = entry.config;
    let input: PayloadTypeDef | undefined;
    if ('def' in what) input = what.def.input;
    else if (config.input !== null) {
      input = typeOf(config.input);
      if (!input) {
        const { node, path } = entry.place('input');
        l.at.sink.add(node, path, ConfigMessages.unknownPayloadType(config.input, closest(config.input, known), known));
        continue;
      }
    }
    if (!input) continue;
    const def = 'def' in what ? what.def : null;
    const name = config.name ?? ref.exportName;
    tools.push({
      name,
      description: config.description ?? (def?.description || input.description || `Tool ${name}`),
      input,
      run: def ? (def.run as ToolFunction) : (what as { fn: ToolFunction }).fn,
      timeoutSeconds: config.timeoutSeconds ?? def?.timeoutSeconds ?? null,
      use: config.use,
      module: ref.modulePath,
    });
  }
  return tools;
}

/** Identity of an agent's tool code, for its handler version (a reload then says `handler code` changed). */
export function toolsVersion(found: readonly FoundTool[]): string {
  return found.map((t) => `${t.entry.config.use}@${t.hash}`).join(',');
}
