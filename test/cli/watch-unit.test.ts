import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigWatcher, describeChanges } from '../../src/cli/watch.js';
import { Errors } from '../../src/errors/catalogue.js';
import type { ReloadResult } from '../../src/events/types.js';
import type { ReloadOutcome } from '../../src/service/reloader.js';
import type { Logger } from '../../src/util/logger.js';
import { until } from './processes.js';

interface Line {
  level: string;
  fields: Record<string, unknown>;
  msg: string;
}

function recordingLogger(lines: Line[]): Logger {
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, msg = '') =>
      void lines.push({ level, fields, msg });
  return { info: at('info'), debug: at('debug'), warn: at('warn'), error: at('error') } as unknown as Logger;
}

const result = (over: Partial<ReloadResult> = {}): ReloadResult => ({
  success: true,
  added: [],
  removed: [],
  updated: [],
  updatedFields: {},
  changed: [],
  restartRequired: [],
  error: null,
  ...over,
});

let watcher: ConfigWatcher | null = null;
afterEach(() => watcher?.close());

describe('ConfigWatcher', () => {
  it('reloads on a watched file only, logs the diff, logs the same failure once, and says when the file loads again', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-watch-'));
    const yaml = path.join(dir, 'organism.yaml');
    writeFileSync(yaml, 'v1');
    writeFileSync(path.join(dir, 'handlers.ts'), 'v1');
    const lines: Line[] = [];
    const invalid = () => Errors.RELOAD_INVALID.withData([{ location: 'config', field: 'max_hops', message: 'organism.yaml:1:1: max_hops: expected a positive integer' }], 'invalid');
    const answers: Array<() => ReloadOutcome> = [
      () => ({ applied: true, loaded: { sources: [yaml] } as never, result: result({ updated: ['writer'], updatedFields: { writer: ['prompt'] }, changed: ['max_hops'] }) }),
      () => {
        throw invalid();
      },
      () => {
        throw invalid();
      },
      () => ({ applied: false, loaded: { sources: [yaml] } as never, result: result() }),
    ];
    let calls = 0;
    watcher = new ConfigWatcher({
      configPath: yaml,
      sources: [yaml, path.join(dir, 'handlers.ts')],
      logger: recordingLogger(lines),
      reload: async (options) => {
        expect(options).toEqual({ whenChanged: true });
        return answers[calls++]!();
      },
    });
    const reloads = () => lines.filter((l) => l.msg.startsWith('watch:'));

    writeFileSync(path.join(dir, 'notes.txt'), 'not watched');
    writeFileSync(yaml, 'v2');
    await until(() => reloads().length === 1, 'the first reload', 15_000);
    expect(reloads()[0]).toMatchObject({ level: 'info', fields: { files: ['organism.yaml'], updatedFields: { writer: ['prompt'] }, changed: ['max_hops'] } });
    expect(reloads()[0]!.msg).toBe('watch: organism.yaml changed; reloaded: writer (prompt); max_hops');

    writeFileSync(yaml, 'broken');
    await until(() => reloads().length === 2, 'the broken edit', 15_000);
    writeFileSync(yaml, 'broken again');
    await until(() => reloads().length === 3, 'the same problems again', 15_000);
    expect(reloads().map((l) => l.level)).toEqual(['info', 'error', 'debug']);
    expect(reloads()[1]!.msg).toContain('changed but does not load; still running the previous configuration:\n  organism.yaml:1:1: max_hops: expected a positive integer');

    writeFileSync(yaml, 'v2');
    await until(() => reloads().length === 4, 'the fix', 15_000);
    expect(reloads()[3]).toMatchObject({ level: 'info', msg: 'watch: the configuration loads again and is the one running; nothing to reload' });
    // handlers.ts was dropped from the watched files by the last load: a change there is not heard.
    expect(watcher.watched()).toEqual([yaml]);
  });

  it('hands each loaded configuration to onLoaded (organism-env.d.ts is rewritten there) and does not hear .d.ts files', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-watch-'));
    const yaml = path.join(dir, 'organism.yaml');
    writeFileSync(yaml, 'v1');
    const lines: Line[] = [];
    const loaded: unknown[] = [];
    const organism = { sources: [yaml] } as never;
    watcher = new ConfigWatcher({
      configPath: yaml,
      sources: [yaml],
      logger: recordingLogger(lines),
      reload: async () => ({ applied: false, loaded: organism, result: result() }),
      onLoaded: (l) => loaded.push(l),
    });
    // Written first, in the same window as the edit: had it been heard, it would be among the files.
    writeFileSync(path.join(dir, 'organism-env.d.ts'), 'export {};');
    writeFileSync(yaml, 'v2');
    await until(() => loaded.length === 1, 'the reload', 15_000);
    expect(loaded[0]).toBe(organism);
    expect(lines.filter((l) => l.msg.startsWith('watch:')).map((l) => l.fields['files'])).toEqual([['organism.yaml']]);
  });

  it('describes a reload the way the log line says it', () => {
    expect(
      describeChanges(
        result({
          added: ['critic'],
          removed: ['old'],
          updated: ['stamp'],
          updatedFields: { stamp: ['handler code'] },
          changed: ['max_hops', 'journal.max_attempts'],
          restartRequired: ['journal.max_attempts'],
        }),
      ),
    ).toBe('added critic; removed old; stamp (handler code); max_hops; journal.max_attempts (at the next restart)');
    expect(describeChanges(result())).toBe('nothing changed');
  });
});
