// `npm run bench:validation`: what validating a POST /orders body costs, in CPU per call, through the service's one
// validation path (`validateInput`, yup). The order body is validated without yup's cast (its schema is
// `.strict()`: every field takes its JSON type as sent, so the cast would only copy the body); the same schema
// with the cast (`.strict(false)`, as before 2026-11-25) runs alternately in the same process, so both see the
// same machine. Bodies: the orders benchmark's one-line body and a 3-line cart.
//
// Environment (defaults in brackets): BENCH_CALLS [100000] per round and mode, BENCH_ROUNDS [5].
// Results: bench/results/validation-<timestamp>.json (`run`: commit and machine; every round, medians, `ratios`).
import fs from 'node:fs';
import path from 'node:path';
import { ValidationError } from '../lib/errors';
import { validateInput } from '../lib/http/validate';
import { createOrderBody } from '../lib/orders/order-schemas';
import { median } from './lib/books';
import { address } from './lib/order-world';
import { ROOT } from './lib/processes';
import { startRunInfo } from './lib/run-info';

const runInfo = startRunInfo();
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const bodies = {
  'one line': JSON.stringify({ orderItems: [{ productId: 1, quantity: 1 }], shippingAddress: address }),
  'three lines': JSON.stringify({
    orderItems: [
      { productId: 3, quantity: 1 },
      { productId: 1, quantity: 2 },
      { productId: 2, quantity: 1 },
    ],
    shippingAddress: address,
  }),
};
const schemas = { 'as built': createOrderBody, 'with the cast': createOrderBody.strict(false) };
type Body = keyof typeof bodies;
type Mode = keyof typeof schemas;

/** CPU microseconds per validation of `body` (parsed afresh each call, as a request's body is). */
function measure(mode: Mode, body: Body, calls: number): number {
  const schema = schemas[mode];
  const json = bodies[body];
  const started = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const valid = validateInput(schema, JSON.parse(json), 'body');
    if (valid instanceof Promise) throw new Error('the order body has no asynchronous test');
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / calls;
}

// Both variants must accept and refuse alike; a refusal must name the same fields.
for (const mode of Object.keys(schemas) as Mode[]) {
  for (const body of Object.keys(bodies) as Body[]) measure(mode, body, 1);
  const refusal = (() => {
    try {
      validateInput(schemas[mode], { orderItems: [{ productId: 0, quantity: '1' }] }, 'body');
      return null;
    } catch (err) {
      return err instanceof ValidationError ? err.details?.errors?.map((entry) => entry.field) : err;
    }
  })();
  const expected = ['orderItems[0].productId', 'orderItems[0].quantity', 'shippingAddress'];
  if (JSON.stringify(refusal) !== JSON.stringify(expected))
    throw new Error(`${mode}: expected a refusal of ${expected.join(', ')}, got ${String(refusal)}`);
}

// Warm-up: both variants optimised before anything is measured.
for (const mode of Object.keys(schemas) as Mode[])
  for (const body of Object.keys(bodies) as Body[]) measure(mode, body, CALLS / 5);

const runs: Array<{ round: number; mode: Mode; body: Body; cpuUsPerCall: number }> = [];
for (let round = 1; round <= ROUNDS; round++) {
  // Alternating, and the order of the two modes flips every round.
  const modes = (Object.keys(schemas) as Mode[]).slice();
  if (round % 2 === 0) modes.reverse();
  for (const body of Object.keys(bodies) as Body[]) {
    for (const mode of modes) {
      const cpuUsPerCall = Number(measure(mode, body, CALLS).toFixed(2));
      runs.push({ round, mode, body, cpuUsPerCall });
      console.log(`round ${round} ${body}, ${mode}: ${cpuUsPerCall} us CPU per validation`);
    }
  }
}

const medians: Record<string, Record<string, number>> = {};
const ratios: Record<string, { value: number; target: string; met: boolean }> = {};
for (const body of Object.keys(bodies) as Body[]) {
  medians[body] = {};
  for (const mode of Object.keys(schemas) as Mode[])
    medians[body][mode] = median(
      runs.filter((r) => r.body === body && r.mode === mode).map((r) => r.cpuUsPerCall),
    );
  const value = Number((medians[body]['as built'] / medians[body]['with the cast']).toFixed(2));
  ratios[`${body}: CPU per validation, as built / with the cast`] = { value, target: '< 1', met: value < 1 };
}

const markdown = [
  '| body | as built, us CPU | with the cast, us CPU | ratio |',
  '|---|---:|---:|---:|',
  ...(Object.keys(bodies) as Body[]).map(
    (body) =>
      `| ${body} | ${medians[body]['as built']} | ${medians[body]['with the cast']} | ${ratios[`${body}: CPU per validation, as built / with the cast`].value}x |`,
  ),
].join('\n');
console.log(`\n${markdown}\n`);

const result = {
  benchmark: 'validation',
  when: new Date().toISOString(),
  settings: { calls: CALLS, rounds: ROUNDS },
  run: runInfo.finish(),
  runs,
  medians,
  ratios,
  markdown,
};
const dir = path.join(ROOT, 'bench', 'results');
fs.mkdirSync(dir, { recursive: true });
const file = path.join(dir, `validation-${result.when.replace(/[:.]/g, '-')}.json`);
fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`results: ${path.relative(ROOT, file)}`);
