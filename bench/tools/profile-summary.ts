/**
 * Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by file,
 * so a benchmark miss can be traced to code. Usage:
 *   node --import tsx bench/tools/profile-summary.ts FILE.cpuprofile [top=25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function summarize(file: string, top = 25): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    self.set(id, (self.get(id) ?? 0) + dt);
  });
  const short = (url: string) =>
    url
      .replace(/^file:\/\//, '')
      .replace(/.*\/node_modules\//, 'nm:')
      .replace(/.*\/work\/main\//, '');
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const where = n.callFrame.url ? short(n.callFrame.url) : '(native)';
    const key = `${n.callFrame.functionName || '(anonymous)'}  ${where}:${n.callFrame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const fileKey = where.startsWith('nm:')
      ? where
          .split('/')
          .slice(0, where.startsWith('nm:@') ? 2 : 1)
          .join('/')
      : where;
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const lines = [`${file}: ${(total / 1e6).toFixed(2)} s sampled`, '', 'self time by function:'];
  for (const [k, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${k}`);
  lines.push('', 'self time by file / package:');
  for (const [k, us] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${k}`);
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [file, top, ...rest] = process.argv.slice(2);
  // A glob that matched two profiles made the second one `top` (NaN: an empty summary).
  if (!file || rest.length > 0 || (top !== undefined && !/^\d+$/.test(top))) {
    process.stderr.write('usage: profile-summary FILE.cpuprofile [top] (one profile; top a whole number)\n');
    process.exit(2);
  }
  process.stdout.write(`${summarize(file, top ? Number(top) : 25)}\n`);
}
