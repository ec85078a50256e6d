import type { LineCounter, YAMLError } from 'yaml';
import { ConfigMessages } from './messages.js';

/** Error codes of the yaml parser that a wrongly indented line produces. */
const INDENTATION_CODES = new Set(['BAD_INDENT', 'MISSING_CHAR', 'BLOCK_AS_IMPLICIT_KEY', 'MULTILINE_IMPLICIT_KEY', 'UNEXPECTED_TOKEN', 'BAD_DIRECTIVE']);

const KEY_WITH_VALUE = /^\s*(?:-\s+)?[A-Za-z_][\w.-]*:\s+[^\s|>#&*!{[][^#]*$/;
const KEY_LINE = /^\s*(?:-\s+)?[A-Za-z_][\w.-]*:(\s|$)/;

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** The column a line's key starts at (after a list item's `- `). */
function keyColumn(line: string): number {
  const item = /^(\s*-\s+)/.exec(line);
  return item ? item[1]!.length : indentOf(line);
}

/**
 * A key line indented deeper than the line before it, when that line already has a value:
 * the parser reports it on the line before (as a broken multi-line key), so point at it.
 * `errorLine` is 1-based; the answer is the 0-based index of the deeper line, or null.
 */
function deeperKeyLine(lines: readonly string[], errorLine: number): number | null {
  const prev = lines[errorLine - 1];
  const next = lines[errorLine];
  if (prev === undefined || next === undefined) return null;
  return KEY_LINE.test(next) && KEY_WITH_VALUE.test(prev) && indentOf(next) > keyColumn(prev) ? errorLine : null;
}

/**
 * One problem for a YAML text that does not parse: its first error (the rest usually follow
 * from it: one mis-indented line yields a cascade), on the line to fix, with what to do.
 */
export function yamlSyntaxProblem(text: string, errors: readonly YAMLError[], counter: LineCounter): { line: number; column: number; message: string } {
  const first = errors[0]!;
  const pos = counter.linePos(first.pos[0]);
  const lines = text.split(/\r?\n/);
  const reason = first.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  const others = errors.length - 1;
  const multiLineKey = first.code === 'BLOCK_AS_IMPLICIT_KEY' || first.code === 'MULTILINE_IMPLICIT_KEY';
  const deeper = multiLineKey ? deeperKeyLine(lines, pos.line) : null;
  if (deeper !== null) {
    const line = deeper + 1;
    return { line, column: indentOf(lines[deeper]!) + 1, message: ConfigMessages.yamlDeeperIndent(lines[deeper]!.trim(), line - 1) };
  }
  const lineText = (lines[pos.line - 1] ?? '').trim();
  let hint: string;
  if (first.code === 'TAB_AS_INDENT') hint = 'indent with spaces, not tabs';
  else if (first.code === 'DUPLICATE_KEY') hint = 'remove or rename one of the two';
  else if (INDENTATION_CODES.has(first.code)) hint = ConfigMessages.yamlIndentHint(lineText);
  else hint = `fix the YAML on this line${lineText ? ` (\`${lineText}\`)` : ''}`;
  return { line: pos.line, column: pos.col, message: ConfigMessages.yamlSyntax(reason, hint, others) };
}
