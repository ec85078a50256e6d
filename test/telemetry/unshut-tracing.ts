/**
 * Child of export-worker.test.ts: starts tracing (and its export worker), ends spans, and
 * returns without shutting tracing down. The process must still exit on its own.
 */
import { OrganismTracing, resolveTracing } from '../../src/telemetry/tracing.js';

const tracing = new OrganismTracing(resolveTracing({ otlp: { endpoint: process.argv[2]!, protocol: 'http/json' }, captureContent: false }, { name: 'unshut', version: '1' }, {})!);
await tracing.ready();
const tracer = tracing.provider.getTracer('unshut');
for (let i = 0; i < 10; i++) tracer.startSpan(`span ${i}`).end();
console.log('spans ended');
