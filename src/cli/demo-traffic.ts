import type { Organism } from '../organism/organism.js';
import type { Logger } from '../util/logger.js';

const TOPICS = [
  'tide pools',
  'the northern lights',
  'honeybee dances',
  'sourdough starters',
  'deep-sea vents',
  'city pigeons',
  'glacier retreat',
  'octopus camouflage',
  'desert blooms',
  'coral spawning',
];

export interface DemoTraffic {
  /** Where questions go, or null when the organism has no agent to ask. */
  readonly target: string | null;
  stop(): void;
}

/**
 * `serve --demo-traffic`: injects a question into the organism's first LLM agent at a steady
 * rate, so a fresh install has live threads to watch. The payload is the agent's own example
 * with every top-level text field set to a rotating topic. Busy or stopping organisms refuse
 * an injection; that one is skipped (logged at debug), the next tick tries again.
 */
export function startDemoTraffic(organism: Organism, intervalMs: number, logger: Logger): DemoTraffic {
  const agent = organism.agents().find((a) => a.isAgent);
  const type = agent ? organism.registry.get(agent.payloadClass) : undefined;
  if (!agent || !type) return { target: null, stop: () => {} };
  const textFields = type.fields.filter((f) => f.type.kind === 'string').map((f) => f.name);
  let n = 0;
  const tick = () => {
    const topic = TOPICS[n++ % TOPICS.length]!;
    const payload: Record<string, unknown> = type.exampleValue();
    for (const f of textFields) payload[f] = topic;
    organism.inject(agent.name, { [type.name]: payload }, { from: 'demo-traffic', metadata: { orgId: n % 3 === 0 ? 'globex' : 'acme', userId: 'demo' } }).catch((err: unknown) => {
      logger.debug({ err: (err as Error).message }, 'demo traffic: injection refused');
    });
  };
  const timer = setInterval(tick, intervalMs);
  tick();
  return {
    target: agent.name,
    stop: () => clearInterval(timer),
  };
}
