import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const STARTER_YAML = `# A starter organism: one LLM agent (on the offline mock provider) and one code tool.
# Every key is documented in docs/configuration.md of the organism package.
organism:
  name: starter

llm:
  providers:
    - name: mock
      type: mock
      script:
        assistant:
          - '<send to="counter"><Count><text>{{text}}</text></Count></send><reply><Question><text>Counting the words of: {{text}}</text></Question></reply>'
    # A real provider: export OPENAI_API_KEY, then give it a lower priority number than mock.
    # - name: openai
    #   type: openai
    #   api_key_env: OPENAI_API_KEY
    #   models: [gpt-4o-mini]

payloads:
  Question:
    description: A question for the assistant
    fields:
      text: string
  Count:
    description: Text whose words should be counted
    fields:
      text: string

listeners:
  - name: assistant
    description: Answers questions and asks the counter for help
    agent: true
    handler: builtin:llm
    model: mock-1
    prompt: You are a helpful assistant. Ask the counter to count words when useful.
    payload: Question
    peers: [counter]

  - name: counter
    description: Counts the words of a text
    handler: ./handlers.ts#countWords
    payload: Count
    peers: []
`;

const STARTER_HANDLERS = `import type { Handler } from 'organism';

/** A code tool: counts words and logs the result. It has no peers, so its branch ends here. */
export const countWords: Handler = (payload, ctx) => {
  const words = String(payload['text'] ?? '').split(/\\s+/).filter(Boolean).length;
  ctx.log.info('counted', { words });
};
`;

/** \`organism init [DIR]\`: writes a runnable starter organism; never overwrites. */
export function initCommand(dirArg: string | undefined): number {
  const dir = path.resolve(dirArg ?? '.');
  mkdirSync(dir, { recursive: true });
  const files: Array<[string, string]> = [
    ['organism.yaml', STARTER_YAML],
    ['handlers.ts', STARTER_HANDLERS],
  ];
  const clash = files.map(([name]) => path.join(dir, name)).filter((f) => existsSync(f));
  if (clash.length > 0) {
    process.stderr.write(`organism init: not overwriting ${clash.join(', ')}\n`);
    return 1;
  }
  for (const [name, text] of files) writeFileSync(path.join(dir, name), text);
  process.stdout.write(
    `Wrote ${path.join(dir, 'organism.yaml')} and handlers.ts.\n` +
      `Next: organism check ${path.join(dir, 'organism.yaml')} && organism serve ${path.join(dir, 'organism.yaml')}\n`,
  );
  return 0;
}
