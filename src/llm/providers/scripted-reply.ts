import { XMLParser } from 'fast-xml-parser';
import { peerToolName, REPLY_TOOL } from '../tool-names.js';
import type { ChatMessage, CompletionRequest, ToolCall, ToolSpec } from '../types.js';

/**
 * What scripted models (the mock provider, the test kit's scripted provider) share: reading the
 * message an agent is handling out of its request, and turning an answer written in the XML
 * reply format into the tool calls of an agent that answers with tools.
 */

const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: false, processEntities: true });
const MESSAGE_OPEN = /<message\b([^>]*)>/g;
const ENVELOPE = /<(send|reply)\b([^>]*)>([\s\S]*?)<\/\1\s*>/g;
const TO_ATTR = /\bto\s*=\s*(?:"([^"]*)"|'([^']*)')/;
const FROM_ATTR = /\bfrom\s*=\s*"([^"]*)"/;
const TYPE_ATTR = /\btype\s*=\s*"([^"]*)"/;

/** The message an agent is handling, as its request shows it. */
export interface IncomingMessage {
  /** The sender (`<message from="...">`); null for a user turn without the wrapper. */
  readonly from: string | null;
  /** The payload type: the wrapper's `type` (tools format) or the root element's name (XML format). */
  readonly payloadType: string | null;
  /** The payload: JSON as sent (tools format), or the elements read as text (XML format). */
  readonly payload: Record<string, unknown>;
  /** The payload as written in the request (JSON or XML). */
  readonly raw: string;
}

/**
 * The latest incoming message of a request: the last `<message ...>...</message>` of the latest
 * user turn that has one (a repair prompt comes after it), or a user turn read as a bare payload.
 */
export function incomingMessage(messages: readonly ChatMessage[]): IncomingMessage | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    const incoming = m.role === 'user' ? readUserTurn(m.content) : null;
    if (incoming) return incoming;
  }
  return null;
}

function readUserTurn(content: string): IncomingMessage | null {
  const wrapped = lastWrapped(content);
  const raw = (wrapped?.inner ?? content).trim();
  const json = jsonObject(raw);
  const xml = json ? null : xmlRoot(raw);
  if (!json && !xml) return null;
  const from = wrapped ? (FROM_ATTR.exec(wrapped.attrs)?.[1] ?? null) : null;
  const type = wrapped ? (TYPE_ATTR.exec(wrapped.attrs)?.[1] ?? null) : null;
  return {
    from: from === null ? null : unescapeAttr(from),
    payloadType: type !== null ? unescapeAttr(type) : (xml?.name ?? null),
    payload: json ?? xml?.value ?? {},
    raw,
  };
}

/** The results of the tool calls answered since the model last spoke (this round's), oldest first. */
export function latestToolResults(messages: readonly ChatMessage[]): Extract<ChatMessage, { role: 'tool' }>[] {
  const out: Extract<ChatMessage, { role: 'tool' }>[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'tool') break;
    out.unshift(m);
  }
  return out;
}

/**
 * Template fields of a request: the top-level fields of the incoming payload as text (objects
 * as JSON), plus `result`: the text of the latest tool result since that payload.
 */
export function templateFields(request: Pick<CompletionRequest, 'messages'>): Record<string, string> {
  let result: string | null = null;
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]!;
    if (m.role === 'tool') {
      result ??= m.content;
      continue;
    }
    const incoming = m.role === 'user' ? readUserTurn(m.content) : null;
    if (!incoming) continue;
    const fields = textFields(incoming.payload);
    return result === null ? fields : { ...fields, result };
  }
  return result === null ? {} : { result };
}

/** A payload's top-level fields as text (objects and lists as JSON). */
export function textFields(payload: Record<string, unknown>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(payload)) fields[k] = typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  return fields;
}

/** An answer in the XML format: as it is without tools; with tools, its `<send>`/`<reply>` elements become calls of them. */
export function answerFromText(text: string, tools: readonly ToolSpec[], idPrefix = 'call_mock_'): { content: string; toolCalls: ToolCall[] } {
  if (tools.length === 0) return { content: text, toolCalls: [] };
  const toolCalls: ToolCall[] = [];
  for (const match of text.matchAll(ENVELOPE)) {
    const [, kind, attrs = '', inner = ''] = match;
    const to = TO_ATTR.exec(attrs);
    const name = kind === 'reply' ? REPLY_TOOL : peerToolName(to?.[1] ?? to?.[2] ?? '');
    const tool = tools.find((t) => t.name === name);
    toolCalls.push({ id: `${idPrefix}${toolCalls.length + 1}`, name, arguments: JSON.stringify(argumentsFromXml(inner, tool?.parameters ?? {})) });
  }
  const rest = text
    .replace(ENVELOPE, '')
    .replace(/<done\s*\/>|<done>\s*<\/done>/g, '')
    .trim();
  return { content: rest, toolCalls };
}

/**
 * A payload element (`<Findings><topic>..</topic></Findings>`) as the JSON the tool's schema
 * describes: numbers and booleans converted, `<item>` lists as arrays, nested types via `$defs`.
 */
function argumentsFromXml(xml: string, schema: Record<string, unknown>): unknown {
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(xml.trim()) as Record<string, unknown>;
  } catch {
    return {};
  }
  const root = Object.values(doc)[0];
  const defs = (schema['$defs'] ?? {}) as Record<string, Record<string, unknown>>;
  const props = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>;
  // The free reply tool takes {payloadType, payload}: the element's name is the type.
  if (props['payloadType'] && props['payload']) return { payloadType: Object.keys(doc)[0] ?? '', payload: coerce(root, {}, defs) };
  // A target of several types takes {"<Type>": {...}}: one property per type, the element's name picks it.
  const tag = Object.keys(doc)[0] ?? '';
  if (schema['maxProperties'] === 1 && props[tag]) return { [tag]: coerce(root, props[tag], defs) };
  return coerce(root, schema, defs);
}

function coerce(value: unknown, schema: Record<string, unknown>, defs: Record<string, Record<string, unknown>>): unknown {
  const ref = schema['$ref'];
  if (typeof ref === 'string') return coerce(value, defs[ref.replace('#/$defs/', '')] ?? {}, defs);
  const type = Array.isArray(schema['type']) ? (schema['type'] as unknown[])[0] : schema['type'];
  if (type === 'array') {
    const items = value && typeof value === 'object' ? (value as Record<string, unknown>)['item'] : undefined;
    const list = items === undefined ? [] : Array.isArray(items) ? items : [items];
    return list.map((v) => coerce(v, (schema['items'] ?? {}) as Record<string, unknown>, defs));
  }
  if (type === 'integer' || type === 'number') return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  if (type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const props = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      // Indentation between child elements is no field.
      if (k === '#text' && typeof v === 'string' && v.trim() === '') continue;
      out[k] = coerce(v, props[k] ?? {}, defs);
    }
    return out;
  }
  if (type === 'object' && value === '') return {};
  return value;
}

/** The attributes and inside of the last `<message ...>...</message>` in `text`, or null. */
function lastWrapped(text: string): { attrs: string; inner: string } | null {
  let start = -1;
  let attrs = '';
  for (const match of text.matchAll(MESSAGE_OPEN)) {
    start = match.index + match[0].length;
    attrs = match[1] ?? '';
  }
  if (start < 0) return null;
  const end = text.indexOf('</message>', start);
  return end < 0 ? null : { attrs, inner: text.slice(start, end) };
}

function jsonObject(text: string): Record<string, unknown> | null {
  if (!text.startsWith('{')) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function xmlRoot(xml: string): { name: string; value: Record<string, unknown> } | null {
  if (!xml.startsWith('<')) return null;
  try {
    const doc = parser.parse(xml) as Record<string, unknown>;
    const names = Object.keys(doc);
    const name = names[names.length - 1];
    const root = name === undefined ? undefined : doc[name];
    if (name === undefined) return null;
    if (root && typeof root === 'object') return { name, value: withoutIndentation(root as Record<string, unknown>) };
    // An empty element (`<Ping/>`, `<Ping></Ping>`) is a payload without fields.
    return root === '' && names.length === 1 ? { name, value: {} } : null;
  } catch {
    return null;
  }
}

/** Drops the whitespace-only text between child elements. */
function withoutIndentation(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '#text' && typeof v === 'string' && v.trim() === '') continue;
    out[k] = v && typeof v === 'object' && !Array.isArray(v) ? withoutIndentation(v as Record<string, unknown>) : v;
  }
  return out;
}

function unescapeAttr(s: string): string {
  return s
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Escapes text for an XML element's content. */
export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
