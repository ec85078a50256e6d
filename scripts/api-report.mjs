// The API reports (etc/*.api.md) of `organism`, `organism/client` and `organism/testing`, made by api-extractor
// from dist/*.d.ts. `node scripts/api-report.mjs` (npm run api:check) fails when a report
// differs from what the code exports, or when an export has no doc comment;
// `--update` (npm run api:update) rewrites the reports instead: commit them with the change.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const update = process.argv.includes('--update');
const configs = ['etc/api-extractor.json', 'etc/api-extractor.client.json', 'etc/api-extractor.testing.json'];

/** Newest modification time of the .ts files under dir. */
function newest(dir) {
  return readdirSync(dir, { withFileTypes: true }).reduce((max, e) => {
    const p = path.join(dir, e.name);
    return Math.max(max, e.isDirectory() ? newest(p) : e.name.endsWith('.ts') ? statSync(p).mtimeMs : 0);
  }, 0);
}

// The declarations come from the build: make it when dist is absent or older than src.
const dts = ['dist/index.d.ts', 'dist/client/index.d.ts', 'dist/testing/index.d.ts'].map((f) => path.join(root, f));
if (dts.some((f) => !existsSync(f) || statSync(f).mtimeMs < newest(path.join(root, 'src')))) {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
}

/** True when the line the message points at declares an export (not a member of one). */
function topLevel(message) {
  if (!message.sourceFilePath || !message.sourceFileLine) return true;
  const line = readFileSync(message.sourceFilePath, 'utf8').split('\n')[message.sourceFileLine - 1] ?? '';
  return /^(export|declare)\b/.test(line);
}

let failed = false;
for (const file of configs) {
  const config = ExtractorConfig.loadFileAndPrepare(path.join(root, file));
  const undocumented = [];
  const result = Extractor.invoke(config, {
    localBuild: update,
    showVerboseMessages: false,
    messageCallback(message) {
      // Every export carries a doc comment; members of exported types are not held to it.
      if (message.messageId === 'ae-undocumented') {
        if (topLevel(message)) undocumented.push(message.formatMessageWithLocation(root));
        message.handled = true;
      }
    },
  });
  for (const m of undocumented) console.error(`${file}: export without a doc comment: ${m}`);
  if (!result.succeeded || undocumented.length > 0) failed = true;
  if (result.apiReportChanged && !update) {
    console.error(`${file}: the exports differ from ${path.relative(root, config.reportFilePath)}. If the change is meant, run \`npm run api:update\` and commit the report.`);
  }
}
process.exitCode = failed ? 1 : 0;
