import { ConfigInvalidError, loadOrganism } from '../config/index.js';
import type { ConfigProblem, LoadedOrganism } from '../config/types.js';
import { mcpBaseDir, McpHub, type McpProbe } from '../mcp/hub.js';
import { silentLogger } from '../util/logger.js';
import { resolveConfigPath } from './config-path.js';
import { ExitCode } from './exit-codes.js';
import { checkHandlerTypes, formatTypeProblem, keepsTypes, writeTypes } from './types.js';

export function formatProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}${p.column === null ? '' : `:${p.column}`}`;
  return `${where}: ${p.keyPath ? `${p.keyPath}: ` : ''}${p.message}`;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

export interface CheckOptions {
  /** Also start each MCP server of `mcp_servers` and list its tools (check is offline without it). */
  readonly probe?: boolean;
  /** false: neither write organism-env.d.ts nor type-check the handler modules (\`--no-types\`). */
  readonly types?: boolean;
}

/**
 * `organism check`: validates a config; prints every problem and every warning. Problems make
 * a non-zero exit; warnings (the config loads, but something will not work as meant) do not.
 * With `--probe`, a valid config's MCP servers are started (or reached) and their tools listed;
 * one that fails is reported with what was run and its last stderr lines, and fails the check.
 */
export async function checkCommand(configArg: string | undefined, options: CheckOptions = {}): Promise<number> {
  const { path } = resolveConfigPath(configArg);
  let loaded: LoadedOrganism;
  try {
    loaded = await loadOrganism(path);
  } catch (err) {
    if (!(err instanceof ConfigInvalidError)) throw err;
    for (const p of err.problems) process.stderr.write(`${formatProblem(p)}\n`);
    process.stderr.write(`${plural(err.problems.length, 'problem')} found\n`);
    return ExitCode.CONFIG_INVALID;
  }
  const warnings = loaded.warnings ?? [];
  for (const w of warnings) process.stderr.write(`warning: ${formatProblem(w)}\n`);
  const failed = options.probe ? await probeMcpServers(loaded) : 0;
  if (failed > 0) {
    process.stderr.write(`${plural(failed, 'MCP server')} could not be reached\n`);
    return ExitCode.CONFIG_INVALID;
  }
  if (options.types !== false && keepsTypes(path)) {
    const typeErrors = await checkTypes(loaded);
    if (typeErrors > 0) {
      process.stderr.write(`${plural(typeErrors, 'type error')} in the handler modules\n`);
      return ExitCode.CONFIG_INVALID;
    }
  }
  process.stdout.write(`${path}: OK${warnings.length > 0 ? ` (${plural(warnings.length, 'warning')})` : ''}\n`);
  return ExitCode.OK;
}

/**
 * A TypeScript project (organism-env.d.ts or tsconfig.json beside organism.yaml): refreshes the
 * declarations, then type-checks the handler modules with them; returns how many errors.
 */
async function checkTypes(loaded: LoadedOrganism): Promise<number> {
  const { file, changed } = writeTypes(loaded);
  const outcome = await checkHandlerTypes(loaded, file);
  if (!outcome.checked) {
    process.stdout.write(`types: ${file} ${changed ? 'written' : 'up to date'}; handler modules not type-checked: ${outcome.reason}\n`);
    return 0;
  }
  for (const p of outcome.problems) process.stderr.write(`${formatTypeProblem(p)}\n`);
  if (outcome.problems.length === 0) process.stdout.write(`types: ${file} ${changed ? 'written' : 'up to date'}; ${plural(outcome.files.length, 'handler module')} type-check\n`);
  return outcome.problems.length;
}

/** Starts (or reaches) every MCP server of the config at once, prints what each gave, stops them; returns how many failed. */
async function probeMcpServers(loaded: LoadedOrganism): Promise<number> {
  const servers = loaded.config.mcpServers ?? [];
  const hub = new McpHub(servers, mcpBaseDir(loaded.path), silentLogger());
  try {
    const probes = await Promise.all(servers.map((s) => hub.probe(s.name)));
    probes.forEach((p, i) => {
      if (p.ok) process.stdout.write(`${formatProbe(p, i)}\n`);
      else process.stderr.write(`${loaded.path}: ${formatProbe(p, i)}\n`);
    });
    return probes.filter((p) => !p.ok).length;
  } finally {
    await hub.close();
  }
}

export function formatProbe(p: McpProbe, index: number): string {
  const where = `mcp_servers[${index}] \`${p.server}\``;
  if (p.ok) return `${where}: connected, ${plural(p.tools.length, 'tool')}${p.tools.length > 0 ? `: ${p.tools.join(', ')}` : ''}`;
  const stderr = p.stderr.length > 0 ? `\n  its stderr (last ${plural(p.stderr.length, 'line')}):\n${p.stderr.map((l) => `    ${l}`).join('\n')}` : '\n  it wrote nothing to stderr';
  const missing = /\bspawn (\S+) ENOENT\b/.exec(p.reason)?.[1];
  const hint = missing ? `\n  \`${missing}\` was not found: check the command's spelling, and that it is installed and on PATH` : '';
  return `${where}: could not connect: ${p.reason}\n  ${p.target}${stderr}${hint}`;
}
