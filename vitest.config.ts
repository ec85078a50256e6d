import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Test directories whose files test in the test's own process (a few also start a child
 * process, which is theirs alone) and touch no process-wide state (environment variables, fake
 * timers, module mocks, global telemetry providers): they share a worker process, importing src/
 * once per worker instead of once per file. On 23 config and payload files that alone took the wall time from 114-143 s to 71-74 s
 * (load ~13; bench/results/test-time-2026-12-06.md). A file that sets process-wide state goes
 * in ISOLATED below, or leaves the shared directories.
 */
const SHARED = [
  'test/config/**/*.test.ts',
  'test/payload/**/*.test.ts',
  'test/core/**/*.test.ts',
  'test/api/**/*.test.ts',
  'test/llm/**/*.test.ts',
  'test/agent/**/*.test.ts',
  'test/usage/**/*.test.ts',
  'test/mcp/**/*.test.ts',
  'test/testing/**/*.test.ts',
  'test/organism/**/*.test.ts',
  'test/pump/**/*.test.ts',
  'test/queue/**/*.test.ts',
  'test/service/**/*.test.ts',
  'test/store/**/*.test.ts',
  'test/cluster/**/*.test.ts',
];
/** In the shared directories, but each in a process of its own: they set process-wide state. */
const ISOLATED = [
  'test/config/sanitize.test.ts', // process.env
  'test/llm/anthropic.test.ts', // process.env
  'test/llm/openai.test.ts', // process.env
  'test/agent/tool-agent.test.ts', // process.env
  'test/service/config-env.test.ts', // process.env
  'test/service/control.test.ts', // process.env
  'test/service/faults.test.ts', // module mocks
  'test/store/sqlite-thread-retry.test.ts', // fake timers
];

export default defineConfig({
  resolve: {
    // The examples' own tests import the test kit by its package name, as a project would: here
    // it is the source, so they run without a build.
    alias: [{ find: /^organism\/testing$/, replacement: fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)) }],
  },
  test: {
    // Crash and restart tests spawn child processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two files at once unless ORGANISM_TEST_WORKERS says otherwise: most of a file's time is
    // waiting on child processes, PostgreSQL and Chromium, so two took the suite from 1,058 s to
    // 591 s on a quiet 2-core machine. The console's browser tests wait on what the page shows
    // (selectors, text, polls with deadlines of their own) under a per-file ceiling sized for a
    // loaded machine, not vitest's 30 s default, which a multi-step browser test could pass
    // when it shared the machine with another file.
    maxWorkers: Number(process.env['ORGANISM_TEST_WORKERS'] ?? 2),
    // Every file is in exactly one project: the shared directories less ISOLATED, ISOLATED, the rest.
    projects: [
      {
        extends: true,
        // One PostgreSQL database for the run's service tests, a schema each (see the file).
        test: { name: 'shared', include: SHARED, exclude: ISOLATED, isolate: false, globalSetup: ['test/support/postgres-run-database.ts'] },
      },
      { extends: true, test: { name: 'isolated:state', include: ISOLATED } },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts', 'examples/**/*.test.ts'], exclude: [...SHARED, '**/node_modules/**'] } },
    ],
  },
});
