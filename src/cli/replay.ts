import { replayCassette } from '../testing/cassette.js';
import { resolveConfigPath } from './config-path.js';
import { ExitCode } from './exit-codes.js';

/**
 * `organism replay CASSETTE... [--config FILE]` (docs/time-travel.md): replays each cassette
 * offline, in process, never calling a provider, and prints its verdict (identical, changed,
 * regression) with what differs. Exits REPLAY_REGRESSION when one regressed.
 */
export async function replayCommand(cassettes: readonly string[], configArg: string | undefined): Promise<number> {
  const { path } = resolveConfigPath(configArg);
  const counts = { identical: 0, changed: 0, regression: 0 };
  for (const file of cassettes) {
    const r = await replayCassette(file, { config: path });
    counts[r.verdict]++;
    process.stdout.write(`${file}: ${r.verdict}\n`);
    for (const d of r.differences) process.stdout.write(`  ${d}\n`);
  }
  process.stdout.write(`${cassettes.length} cassette(s): ${counts.identical} identical, ${counts.changed} changed, ${counts.regression} regression\n`);
  return counts.regression > 0 ? ExitCode.REPLAY_REGRESSION : ExitCode.OK;
}
