import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { unescapeXml } from './xml-text.js';

/** One XML element as the payload code sees it: its name and its children in document order. */
export interface XmlElement {
  readonly name: string;
  readonly children: readonly XmlNode[];
}

/** Character data, already decoded (entity references resolved, CDATA taken literally). */
export interface XmlText {
  readonly text: string;
}

/** An XML element or character data. */
export type XmlNode = XmlElement | XmlText;

export type XmlParseResult = { readonly ok: true; readonly element: XmlElement } | { readonly ok: false; readonly message: string };

const STANDARD_ENTITIES = new Set(['amp', 'lt', 'gt', 'quot', 'apos']);

// Safe configuration: no entity processing by the parser (we decode the 5 standard entities and
// numeric references ourselves), attributes ignored, document order kept so that mixed text and
// CDATA stay where they were. DOCTYPE is refused before parsing (see parseXmlElement).
const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: true,
  parseTagValue: false,
  trimValues: false,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  cdataPropName: '#cdata',
  commentPropName: false,
  // Element names become keys of fresh single-key objects only, so renaming is unnecessary.
  onDangerousProperty: (name: string) => name,
});

type RawNode = Record<string, unknown>;

export function isXmlElement(node: XmlNode): node is XmlElement {
  return 'name' in node;
}

/**
 * Parses a string that is exactly one XML element (optionally preceded by an XML declaration
 * and surrounded by whitespace or comments). DOCTYPE and entity declarations are refused, so
 * no entity expansion can happen; only the five standard entities and numeric character
 * references are decoded. Malformed XML is reported with its line and column.
 */
export function parseXmlElement(xml: string): XmlParseResult {
  const source = xml.trimStart();
  if (/<!DOCTYPE|<!ENTITY/i.test(source)) return { ok: false, message: 'DOCTYPE and entity declarations are not allowed' };
  if (!/<[A-Za-z_]/.test(source)) return { ok: false, message: 'no XML element found' };
  const valid = XMLValidator.validate(source);
  if (valid !== true) {
    const where = valid.err.col === undefined ? `line ${valid.err.line}` : `line ${valid.err.line}, column ${valid.err.col}`;
    // The validator quotes what it refused (a tag name can be the rest of the document).
    return { ok: false, message: `malformed XML at ${where}: ${clip(valid.err.msg, 200)}` };
  }
  // The validator lets text after a self-closing root (`<a/>x`) through and the parser drops it.
  const trailing = textAfterLastTag(source);
  if (trailing) return { ok: false, message: `text after the root element: ${JSON.stringify(clip(trailing))}` };
  let raw: unknown;
  try {
    raw = parser.parse(source);
  } catch (e) {
    // The parser refuses some names (`constructor`, `__proto__`) and very deep nesting.
    const message = e instanceof Error ? e.message : String(e);
    const reserved = /Invalid name: "([^"]+)"/.exec(message)?.[1];
    return { ok: false, message: reserved ? `element name <${reserved}> is reserved and not allowed` : `XML not accepted: ${message}` };
  }
  const top = convertChildren(Array.isArray(raw) ? (raw as RawNode[]) : []);
  if (!top.ok) return top;
  const roots = top.nodes.filter(isXmlElement);
  const strayText = top.nodes.find((n): n is XmlText => !isXmlElement(n) && n.text.trim() !== '');
  if (strayText) return { ok: false, message: `text outside the root element: ${JSON.stringify(clip(strayText.text))}` };
  if (roots.length !== 1) {
    return { ok: false, message: `expected exactly one root element, found ${roots.length === 0 ? 'none' : roots.map((r) => `<${r.name}>`).join(', ')}` };
  }
  return { ok: true, element: roots[0]! };
}

/**
 * The non-blank text after the document's last `>`, or null. A search from the end, not a
 * pattern like `[^>\s][^>]*$`: that one rescans to the end from every position (quadratic).
 */
function textAfterLastTag(source: string): string | null {
  const tail = source.slice(source.lastIndexOf('>') + 1).trim();
  return tail === '' ? null : tail;
}

type Converted = { ok: true; nodes: XmlNode[] } | { ok: false; message: string };

function convertChildren(raw: readonly RawNode[]): Converted {
  const nodes: XmlNode[] = [];
  for (const item of raw) {
    for (const key of Object.keys(item)) {
      if (key === ':@') continue; // attributes (ignored)
      const value = item[key];
      if (key === '#text') {
        const decoded = decodeText(String(value));
        if (!decoded.ok) return decoded;
        nodes.push({ text: decoded.text });
      } else if (key === '#cdata') {
        const parts = Array.isArray(value) ? (value as RawNode[]) : [];
        nodes.push({ text: parts.map((p) => String(p['#text'] ?? '')).join('') });
      } else {
        const children = convertChildren(Array.isArray(value) ? (value as RawNode[]) : []);
        if (!children.ok) return children;
        nodes.push({ name: key, children: children.nodes });
      }
    }
  }
  return { ok: true, nodes };
}

function decodeText(raw: string): { ok: true; text: string } | { ok: false; message: string } {
  for (const m of raw.matchAll(/&([A-Za-z_][\w.-]*);/g)) {
    if (!STANDARD_ENTITIES.has(m[1]!)) {
      return { ok: false, message: `undefined entity &${m[1]}; (only &amp; &lt; &gt; &quot; &apos; and numeric character references are allowed)` };
    }
  }
  return { ok: true, text: unescapeXml(raw) };
}

/** The concatenated character data directly inside an element. */
export function textOf(element: XmlElement): string {
  return element.children.map((c) => (isXmlElement(c) ? '' : c.text)).join('');
}

export function clip(s: string, max = 40): string {
  return s.length > max ? `${s.slice(0, max)}...` : s;
}
