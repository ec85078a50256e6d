import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Crash and restart tests spawn child processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two files at once: vitest's default (cores - 1) runs one file at a time on a 2-core
    // machine, and most files spend their time waiting on child processes (servers, workers,
    // Chromium, PostgreSQL), not on the CPU. ORGANISM_TEST_WORKERS overrides it.
    maxWorkers: Number(process.env['ORGANISM_TEST_WORKERS'] ?? 2),
  },
});
