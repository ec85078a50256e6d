import type { PayloadType } from './payload-type.js';

/**
 * The schemas of a listener that accepts several payload types (`payload: [Ticket, Approval]`).
 * Its messages name their type the way an inject does: `{"Ticket": {...}}`, one key, the type's
 * name, its value one payload of that type. A listener of one type keeps that type's own
 * schemas (these functions are not used for it).
 */

/**
 * Tool parameters for a message to such a listener: an object with one optional property per
 * type, exactly one of them given. The top level stays `type: object` (Anthropic requires it;
 * OpenAI's strict mode refuses a top-level anyOf), and the key names the type as in an inject.
 * The types' nested definitions are merged under `$defs`; a type that refers to itself (`$ref:
 * "#"` in its own schema) is given there too, so the reference still resolves.
 */
export function unionParameters(types: readonly PayloadType[]): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  const properties: Record<string, unknown> = {};
  for (const type of types) {
    const { $schema: _schema, ...schema } = type.jsonSchema();
    // Its nested types may refer back to it (`#`) as well.
    const rooted = rerootSelf(schema, type.name);
    const { $defs, ...body } = rooted.value;
    Object.assign(defs, $defs as Record<string, unknown> | undefined);
    if (rooted.self) defs[type.name] = body;
    properties[type.name] = body;
  }
  return {
    type: 'object',
    description: `Exactly one of ${types.map((t) => t.name).join(', ')}: the key names the payload type.`,
    properties,
    minProperties: 1,
    maxProperties: 1,
    additionalProperties: false,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  };
}

/** `{"Ticket": {...}}`: the type its single key names and the payload under it, or why the value is not of that form. */
export function unionMember(types: readonly PayloadType[], value: Record<string, unknown>): { type: PayloadType; payload: unknown } | { error: string } {
  const keys = Object.keys(value);
  const names = types.map((t) => t.name).join(', ');
  if (keys.length !== 1) return { error: `expected one key naming the payload type (one of ${names}), got ${keys.length === 0 ? 'none' : keys.join(', ')}` };
  const key = keys[0] as string;
  const type = types.find((t) => t.name === key);
  if (!type) return { error: `${key} is not one of the accepted payload types (${names})` };
  return { type, payload: value[key] };
}

/** An example tool call's arguments: the first type's example, under its name. */
export function unionExample(types: readonly PayloadType[]): Record<string, unknown> {
  const first = types[0];
  return first ? { [first.name]: first.exampleValue() } : {};
}

/** One XSD with a root element per type and each complexType once (types may share nested ones). */
export function unionXsd(types: readonly PayloadType[]): string {
  const elements: string[] = [];
  const blocks = new Map<string, string[]>();
  for (const type of types) {
    const lines = type.xsd().split('\n').slice(2, -1);
    let current: string[] | null = null;
    for (const line of lines) {
      if (line.startsWith('  <xs:element ')) elements.push(line);
      else if (line.startsWith('  <xs:complexType ')) {
        current = blocks.has(line) ? null : [];
        if (current) blocks.set(line, current);
        current?.push(line);
      } else current?.push(line);
    }
  }
  return [...xsdHeader(types[0]), ...elements, ...[...blocks.values()].flat(), '</xs:schema>'].join('\n');
}

function xsdHeader(type: PayloadType | undefined): string[] {
  return type ? type.xsd().split('\n').slice(0, 2) : [];
}

/** A type's own schema with its self-references (`#`) pointed at `#/$defs/<name>`. */
function rerootSelf(schema: Record<string, unknown>, name: string): { value: Record<string, unknown>; self: boolean } {
  let self = false;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && x === '#') {
        self = true;
        out[k] = `#/$defs/${name}`;
      } else out[k] = walk(x);
    }
    return out;
  };
  const value = walk(schema) as Record<string, unknown>;
  return { value, self };
}
