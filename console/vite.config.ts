import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// Built into dist/console, which `organism serve` serves at / (see src/service/console.ts).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  // The package's typed client, from its sources (bundled for the browser: no Node built-in).
  resolve: { alias: { 'organism/client': fileURLToPath(new URL('../src/client/index.ts', import.meta.url)) } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    // Everything is same-origin; no preload polyfill fetches, no inlined module workers.
    modulePreload: { polyfill: false },
    // One bundle of ~0.5 MB is expected (React, TanStack, uPlot, dagre); the budget is 1.5 MB.
    chunkSizeWarningLimit: 1500,
  },
});
