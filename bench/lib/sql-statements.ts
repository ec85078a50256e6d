/**
 * Splits a simple-protocol query string into its statements: `;` ends a statement except inside
 * a quoted literal or identifier ('it''s', "a;b"). The writer sends `BEGIN; <stmt>` and
 * `<stmt>; ...; COMMIT` as one query, so a counter that looked only at the first word would
 * count a whole transaction as transaction control.
 */
export function sqlStatements(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null; // a doubled quote closes and reopens: same result
    } else if (c === "'" || c === '"') quote = c;
    else if (c === ';') {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0);
}
