import { Errors, OrganismError } from '../../errors/catalogue.js';
import type { ServiceOrganism } from '../context.js';
import type { WsClient } from './client.js';
import { parseFilter } from './filter.js';
import { frameJson } from './frames.js';

/** How long an inject may wait for room in a full queue before it is refused as busy. */
const INJECT_WAIT_MS = 5_000;

/** Answers the command being handled (its `id`, when it had one, is echoed in the reply). */
type Reply = (event: string, body?: Record<string, unknown>) => void;

function replyError(reply: Reply, error: OrganismError, command: unknown): void {
  reply('error', { error: error.detail, ...(typeof command === 'string' ? { cmd: command } : {}) });
}

/** A command id: a string of at most 128 characters or a finite number; anything else is refused. */
function commandId(raw: unknown): string | number | undefined | OrganismError {
  if (raw === undefined) return undefined;
  if (typeof raw === 'string' && raw.length <= 128) return raw;
  if (typeof raw === 'number' && Number.isFinite(raw)) return raw;
  return Errors.WS_MALFORMED_COMMAND('id must be a string (up to 128 characters) or a number');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The fields an inject command takes (snake_case accepted), as POST /inject's body. */
const INJECT_KEYS = new Set(['cmd', 'id', 'to', 'payload', 'threadId', 'thread_id', 'metadata']);
const METADATA_KEYS: Record<string, string> = { orgId: 'orgId', userId: 'userId', org_id: 'orgId', user_id: 'userId' };
const MAX_ID_LENGTH = 256;

type Problem = { location: string; field: string; message: string };

/**
 * The inject command's thread id and metadata, or its problems: as on POST /inject, a key it
 * does not take, a thread id or metadata value that is not a string of 1 to 256 characters
 * (metadata: 0 to 256), is refused by name rather than dropped.
 */
function injectFields(cmd: Record<string, unknown>): { threadId?: string; metadata: Record<string, string> } | Problem[] {
  const problems: Problem[] = [];
  for (const key of Object.keys(cmd)) if (!INJECT_KEYS.has(key)) problems.push({ location: 'command', field: key, message: 'is not a field of the inject command' });
  const rawThread = cmd['threadId'] ?? cmd['thread_id'];
  if (rawThread !== undefined && (typeof rawThread !== 'string' || rawThread === '' || rawThread.length > MAX_ID_LENGTH)) {
    problems.push({ location: 'command', field: 'threadId', message: `must be a string of 1 to ${MAX_ID_LENGTH} characters` });
  }
  const metadata: Record<string, string> = {};
  const raw = cmd['metadata'];
  if (raw !== undefined && !isRecord(raw)) problems.push({ location: 'command', field: 'metadata', message: 'must be an object' });
  for (const [key, value] of Object.entries(isRecord(raw) ? raw : {})) {
    const name = METADATA_KEYS[key];
    if (name === undefined) problems.push({ location: 'command', field: `metadata.${key}`, message: 'is not a field of metadata (orgId, userId)' });
    else if (typeof value !== 'string' || value.length > MAX_ID_LENGTH)
      problems.push({ location: 'command', field: `metadata.${key}`, message: `must be a string of at most ${MAX_ID_LENGTH} characters` });
    else if (!(name in metadata) || key === name) metadata[name] = value; // camelCase wins over its snake_case alias
  }
  if (problems.length > 0) return problems;
  return { ...(typeof rawThread === 'string' ? { threadId: rawThread } : {}), metadata };
}

async function inject(organism: ServiceOrganism, client: WsClient, reply: Reply, cmd: Record<string, unknown>): Promise<void> {
  if (client.channel !== 'control') return replyError(reply, Errors.WS_INJECT_ON_MESSAGES(), 'inject');
  if (client.role !== 'operator') return replyError(reply, Errors.OPERATOR_REQUIRED(), 'inject');
  const to = cmd['to'];
  if (typeof to !== 'string' || to === '') return replyError(reply, Errors.WS_INJECT_NEEDS_TARGET(), 'inject');
  const fields = injectFields(cmd);
  try {
    if (Array.isArray(fields)) throw Errors.INVALID_REQUEST.withData(fields, fields.map((p) => `${p.field} ${p.message}`).join('; '));
    const result = await organism.inject(to, cmd['payload'] ?? {}, {
      ...(fields.threadId !== undefined ? { threadId: fields.threadId } : {}),
      metadata: fields.metadata,
      waitMs: INJECT_WAIT_MS,
    });
    reply('injected', { threadId: result.threadId, messageId: result.messageId });
  } catch (err) {
    const error = err instanceof OrganismError ? err : Errors.WS_INJECT_FAILED(err instanceof Error ? err.message : String(err));
    reply('error', { error: error.detail, cmd: 'inject', ...(error.data !== undefined ? { errors: error.data } : {}) });
  }
}

/**
 * Handles one text frame from a client: `{cmd: "subscribe" | "inject" | "ping", id?, ...}`.
 * Every command is answered (`subscribed`, `injected`, `pong` or `error`), with the command's
 * `id` when it gave one, so a client can pair replies with commands; nothing a client sends
 * can throw out of here.
 */
export async function handleCommand(organism: ServiceOrganism, client: WsClient, text: string): Promise<void> {
  let cmd: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isRecord(parsed)) throw new Error('expected a JSON object like {"cmd": "ping"}');
    cmd = parsed;
  } catch (err) {
    return replyError((event, body = {}) => client.send(frameJson(event, body).json), Errors.WS_MALFORMED_COMMAND((err as Error).message), undefined);
  }
  const name = cmd['cmd'];
  const id = commandId(cmd['id']);
  const reply: Reply = (event, body = {}) => client.send(frameJson(event, { ...body, ...(id !== undefined && !(id instanceof OrganismError) ? { id } : {}) }).json);
  if (id instanceof OrganismError) return replyError(reply, id, name);
  switch (name) {
    case 'ping':
      return reply('pong');
    case 'subscribe': {
      const filter = parseFilter(isRecord(cmd['filter']) ? cmd['filter'] : cmd);
      if (filter instanceof OrganismError) return replyError(reply, filter, 'subscribe');
      client.filter = filter; // replaces the previous filter
      return reply('subscribed', { filter });
    }
    case 'inject':
      return inject(organism, client, reply, cmd);
    default:
      return replyError(reply, Errors.WS_UNKNOWN_COMMAND(typeof name === 'string' ? name : JSON.stringify(name ?? null)), name);
  }
}
