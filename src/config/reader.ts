import { isMap, isScalar, isSeq, type LineCounter, type Node } from 'yaml';
import type { ConfigProblem } from './types.js';
import { ConfigMessages, Expected } from './messages.js';
import { closest } from './suggest.js';

/** Collects problems with their place in the file. */
export class ProblemSink {
  readonly problems: ConfigProblem[] = [];

  constructor(
    readonly file: string,
    private readonly lines: LineCounter | null,
  ) {}

  /** Line of a node (1-based), or null when it has no position. */
  lineOf(node: Node | null | undefined): number | null {
    return this.position(node)?.line ?? null;
  }

  add(node: Node | null | undefined, keyPath: string, message: string): void {
    const pos = this.position(node);
    this.problems.push({ file: this.file, line: pos?.line ?? null, column: pos?.col ?? null, keyPath, message });
  }

  addAt(line: number | null, column: number | null, keyPath: string, message: string): void {
    this.problems.push({ file: this.file, line, column, keyPath, message });
  }

  private position(node: Node | null | undefined): { line: number; col: number } | null {
    const offset = node?.range?.[0];
    if (offset === undefined || !this.lines) return null;
    return this.lines.linePos(offset);
  }
}

/** How a value is shown in a message: strings quoted, structures named. */
export function describeNode(node: Node | null): string {
  if (node === null) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    const v = node.value;
    if (v === null || v === undefined) return 'nothing';
    return typeof v === 'string' ? JSON.stringify(v) : String(v);
  }
  return 'an unsupported value';
}

export function joinPath(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}

interface Entry {
  readonly key: Node;
  readonly value: Node | null;
}

/** An item of a YAML list with its key path. */
export interface SeqItem {
  readonly node: Node;
  readonly path: string;
}

/**
 * A YAML mapping being validated: reports unknown keys on construction and offers typed
 * getters that report wrong types and fall back to a default, so validation always goes on.
 */
export class MapReader {
  private readonly entries = new Map<string, Entry>();

  constructor(
    readonly sink: ProblemSink,
    readonly node: Node,
    readonly path: string,
    allowed: readonly string[] | null,
  ) {
    if (!isMap(node)) return;
    for (const pair of node.items) {
      const keyNode = pair.key as Node | null;
      const key = isScalar(keyNode) ? String(keyNode.value) : null;
      if (key === null || keyNode === null) continue;
      if (allowed && !allowed.includes(key)) {
        sink.add(keyNode, joinPath(path, key), ConfigMessages.unknownKey(key, closest(key, allowed), allowed));
        continue;
      }
      this.entries.set(key, { key: keyNode, value: (pair.value as Node | null) ?? null });
    }
  }

  /** Opens a mapping, reporting a wrong type (then returns null). */
  static open(sink: ProblemSink, node: Node | null, path: string, allowed: readonly string[] | null): MapReader | null {
    if (node === null || (isScalar(node) && node.value === null)) return null;
    if (!isMap(node)) {
      sink.add(node, path, ConfigMessages.wrongType(Expected.mapping, describeNode(node)));
      return null;
    }
    return new MapReader(sink, node, path, allowed);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** The value node of `key`; null when absent or explicitly empty. */
  valueNode(key: string): Node | null {
    const v = this.entries.get(key)?.value ?? null;
    if (v !== null && isScalar(v) && v.value === null) return null;
    return v;
  }

  keyNode(key: string): Node | null {
    return this.entries.get(key)?.key ?? null;
  }

  /** The node to point at for `key`: its value, else its key, else this mapping. */
  nodeFor(key: string): Node {
    return this.valueNode(key) ?? this.keyNode(key) ?? this.node;
  }

  has(key: string): boolean {
    return this.valueNode(key) !== null;
  }

  pathOf(key: string): string {
    return joinPath(this.path, key);
  }

  problem(key: string, message: string): void {
    this.sink.add(this.nodeFor(key), this.pathOf(key), message);
  }

  private missing(key: string): void {
    this.sink.add(this.node, this.pathOf(key), ConfigMessages.missingKey(key));
  }

  private scalar(key: string, required: boolean): { node: Node; value: unknown } | null {
    const node = this.valueNode(key);
    if (node === null) {
      if (required) this.missing(key);
      return null;
    }
    return { node, value: isScalar(node) ? node.value : undefined };
  }

  string(key: string, required = false): string | null {
    const s = this.scalar(key, required);
    if (!s) return null;
    if (typeof s.value !== 'string') {
      this.wrong(key, Expected.string, s.node);
      return null;
    }
    return s.value;
  }

  boolean(key: string, fallback: boolean): boolean {
    const s = this.scalar(key, false);
    if (!s) return fallback;
    if (typeof s.value !== 'boolean') {
      this.wrong(key, Expected.boolean, s.node);
      return fallback;
    }
    return s.value;
  }

  /** An integer; `min` 1 = positive, 0 = non-negative, null = any. */
  integer(key: string, fallback: number, min: 0 | 1 | null): number {
    const s = this.scalar(key, false);
    if (!s) return fallback;
    const v = s.value;
    if (typeof v !== 'number' || !Number.isInteger(v) || (min !== null && v < min)) {
      this.wrong(key, min === 1 ? Expected.positiveInteger : min === 0 ? Expected.nonNegativeInteger : Expected.integer, s.node);
      return fallback;
    }
    return v;
  }

  /** A finite number; `positive` excludes zero, otherwise non-negative. */
  number(key: string, fallback: number, positive: boolean, required = false): number {
    const s = this.scalar(key, required);
    if (!s) return fallback;
    const v = s.value;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (positive && v === 0)) {
      this.wrong(key, positive ? Expected.positiveNumber : Expected.nonNegativeNumber, s.node);
      return fallback;
    }
    return v;
  }

  enumeration<T extends string>(key: string, allowed: readonly T[], required: boolean): T | null {
    const s = this.scalar(key, required);
    if (!s) return null;
    if (typeof s.value !== 'string' || !(allowed as readonly string[]).includes(s.value)) {
      const suggestion = typeof s.value === 'string' ? closest(s.value, allowed) : null;
      this.sink.add(s.node, this.pathOf(key), ConfigMessages.badEnum(allowed, describeNode(s.node), suggestion));
      return null;
    }
    return s.value as T;
  }

  /** A list of strings; each bad item is reported at its own place. */
  stringList(key: string): string[] {
    const items = this.list(key, false);
    if (items === null) return [];
    const out: string[] = [];
    for (const item of items) {
      const v = isScalar(item.node) ? item.node.value : undefined;
      if (typeof v === 'string') out.push(v);
      else this.sink.add(item.node, item.path, ConfigMessages.wrongType(Expected.string, describeNode(item.node)));
    }
    return out;
  }

  /** The items of a list, each with its path; null (reported) when not a list. */
  list(key: string, required: boolean): SeqItem[] | null {
    const node = this.valueNode(key);
    if (node === null) {
      if (required) this.missing(key);
      return null;
    }
    if (!isSeq(node)) {
      this.wrong(key, Expected.list, node);
      return null;
    }
    return node.items.map((item, i) => ({ node: item as Node, path: `${this.pathOf(key)}[${i}]` }));
  }

  /** List items without reporting anything (for second passes over already-checked keys). */
  items(key: string): SeqItem[] {
    const node = this.valueNode(key);
    return isSeq(node) ? node.items.map((item, i) => ({ node: item as Node, path: `${this.pathOf(key)}[${i}]` })) : [];
  }

  /** A nested mapping without reporting anything (for second passes over already-checked keys). */
  quietMap(key: string): MapReader | null {
    const node = this.valueNode(key);
    return isMap(node) ? new MapReader(this.sink, node, this.pathOf(key), null) : null;
  }

  map(key: string, allowed: readonly string[] | null, required = false): MapReader | null {
    const node = this.valueNode(key);
    if (node === null) {
      if (required) this.missing(key);
      return null;
    }
    return MapReader.open(this.sink, node, this.pathOf(key), allowed);
  }

  private wrong(key: string, expected: string, node: Node): void {
    this.sink.add(node, this.pathOf(key), ConfigMessages.wrongType(expected, describeNode(node)));
  }
}
