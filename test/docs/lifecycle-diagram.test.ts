// The lifecycle diagram is drawn from the real order machine: one node per order status, one edge per
// transition with its event, guard and role; `npm run visualize` writes it; the committed copy is current;
// GET /docs/order-lifecycle serves it with a legend.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import {
  nextStatus,
  ORDER_STATUSES,
  orderLifecycleMachine,
  type TransitionMeta,
} from '../../actors/order-lifecycle-machine';
import { walkMachine } from '../../actors/machine-walk';
import {
  CURRENT_FILL,
  diagramDot,
  renderSvg,
  TAKEN_COLOR,
  VISITED_FILL,
} from '../../lib/order-diagram/diagram-dot';
import { renderDiagram } from '../../lib/order-diagram/diagram-svg';
import { createOrderDiagramService } from '../../lib/order-diagram/diagram-service';
import { diagramModel } from '../../lib/order-diagram/diagram-model';
import { startTestApp, type TestApp } from '../helpers/harness';

const run = promisify(execFile);
const ROOT = path.join(import.meta.dirname, '..', '..');

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

/** Status names of the SVG's state nodes, in document order (Graphviz writes `-` as `&#45;` in ids). */
function svgStateNodes(svg: string): string[] {
  return [...svg.matchAll(/<g id="state&#45;(\w+)" class="node state[^"]*">/g)].map((m) => m[1]);
}

test('the model walked from the machine has every order status and every transition with its role', (t) => {
  const model = diagramModel();
  t.is(model.id, 'orderLifecycle');
  t.is(model.initial, 'PENDING');
  t.deepEqual(model.states.map((s) => s.name).sort(), [...ORDER_STATUSES].sort());
  t.deepEqual(
    model.states.filter((s) => s.final).map((s) => s.name),
    ['DELIVERED', 'CANCELLED'],
  );
  // The model carries every transition of the machine's walk, each with the role from its meta.
  const fromMachine = walkMachine<TransitionMeta>(orderLifecycleMachine).transitions.map(
    (r) => `${r.from} ${r.event}[${r.guard}] ${r.meta?.role} -> ${r.to}`,
  );
  const fromModel = model.transitions.map((r) => `${r.from} ${r.event}[${r.guard}] ${r.role} -> ${r.to}`);
  t.deepEqual(fromModel.sort(), fromMachine.sort());
  t.true(model.transitions.every((tr) => ['SELLER', 'BUYER', 'SYSTEM'].includes(tr.role!)));
  // The system's expiry of an unconfirmed order is drawn like any member's transition.
  t.like(
    model.transitions.find((tr) => tr.event === 'EXPIRE'),
    { from: 'PENDING', to: 'CANCELLED', guard: 'bySystem', role: 'SYSTEM' },
  );
});

test('the DOT has one node per status and one labelled edge per transition', (t) => {
  const model = diagramModel();
  const dot = diagramDot(model);
  const nodes = [...dot.matchAll(/^ {2}"(\w+)" \[id="state-\w+", class="state/gm)].map((m) => m[1]);
  t.deepEqual(nodes.sort(), [...ORDER_STATUSES].sort());
  for (const tr of model.transitions) {
    const line = dot.split('\n').find((l) => l.includes(`id="transition-${tr.from}-${tr.event}-${tr.to}"`));
    t.truthy(line, `${tr.from} -${tr.event}-> ${tr.to}`);
    t.true(line!.startsWith(`  "${tr.from}" -> "${tr.to}"`));
    t.true(line!.includes(`<B>${tr.event}</B><BR/>[${tr.guard}]<BR/>by ${tr.role}`));
    t.true(line!.includes(`role-${tr.role}`));
  }
  t.true(dot.includes('"__start" -> "PENDING"'));
});

test('a highlighted diagram marks the current status, the visited ones and the transitions taken', async (t) => {
  const model = diagramModel();
  const svg = await renderSvg(
    diagramDot(model, {
      current: 'SHIPPED',
      steps: [
        { from: null, to: 'PENDING' },
        { from: 'PENDING', to: 'CONFIRMED' },
        { from: 'CONFIRMED', to: 'SHIPPED' },
      ],
      title: 'Order ORD-1',
    }),
  );
  t.deepEqual([...svg.matchAll(/class="node state current[^"]*"/g)].length, 1);
  t.regex(svg, /<g id="state&#45;SHIPPED" class="node state current">/);
  t.regex(svg, /<g id="state&#45;PENDING" class="node state visited">/);
  t.regex(svg, /<g id="state&#45;CONFIRMED" class="node state visited">/);
  t.regex(svg, /<g id="state&#45;DELIVERED" class="node state final">/);
  const taken = [...svg.matchAll(/<g id="transition&#45;([\w&#;]+)" class="edge transition[^"]* taken">/g)].map((m) =>
    m[1].replace(/&#45;/g, '-'),
  );
  t.deepEqual(taken.sort(), ['CONFIRMED-SHIP-SHIPPED', 'PENDING-CONFIRM-CONFIRMED', 'start']);
  t.true(svg.includes('Order ORD&#45;1'));
});

test('the finished SVG scales to its container and carries its own legend', async (t) => {
  const model = diagramModel();
  const raw = await renderSvg(diagramDot(model));
  const svg = await renderDiagram(model);
  const rawBox = /viewBox="0\.00 0\.00 ([\d.]+) ([\d.]+)"/.exec(raw)!;
  const root = /<svg [^>]*>/.exec(svg)![0];
  t.regex(root, /^<svg width="100%" viewBox="0 0 [\d.]+ [\d.]+" preserveAspectRatio="xMidYMin meet"/);
  t.notRegex(root, /\d(pt|px)"/, 'no fixed size');
  const [, width, height] = /viewBox="0 0 ([\d.]+) ([\d.]+)"/.exec(root)!.map(Number);
  t.is(width, Number(rawBox[1]));
  t.true(height > Number(rawBox[2]), 'the viewBox grew to hold the legend');
  const legend = svg.slice(svg.indexOf('<g id="legend"'));
  t.true(legend.endsWith('</g>\n</svg>\n'));
  for (const text of [
    'Legend',
    'a final status',
    'EVENT [guard] triggered by a SELLER',
    'EVENT [guard] triggered by a BUYER',
    'EVENT [guard] triggered by a SYSTEM',
    "an order's current status",
    'statuses the order went through',
    'transitions the order took',
    'transitions it did not take',
  ])
    t.true(legend.includes(`>${text}</text>`), text);
  t.true(legend.includes(`fill="${CURRENT_FILL}"`));
  t.true(legend.includes(`fill="${VISITED_FILL}"`));
  t.true(legend.includes(`stroke="${TAKEN_COLOR}" stroke-width="3.2"`));
  t.true(legend.includes('stroke-dasharray'));
});

test('npm run visualize writes the DOT and an SVG with one node per status; the committed copy is current', async (t) => {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'visualize-'));
  try {
    await run(process.execPath, ['--import', 'tsx', 'scripts/visualize.ts', '--out', outDir], { cwd: ROOT });
    const dot = fs.readFileSync(path.join(outDir, 'order-lifecycle.dot'), 'utf8');
    const svg = fs.readFileSync(path.join(outDir, 'order-lifecycle.svg'), 'utf8');
    t.is(dot, diagramDot(diagramModel()));
    t.true(svg.startsWith('<?xml'));
    t.deepEqual(svgStateNodes(svg).sort(), [...ORDER_STATUSES].sort());
    for (const event of [
      'CONFIRM',
      'SHIP',
      'DELIVER',
      'CANCEL',
      'EXPIRE',
      'bySeller',
      'byBuyer',
      'bySystem',
      'by SELLER',
      'by BUYER',
      'by SYSTEM',
    ]) {
      t.true(svg.includes(event), event);
    }
    // docs/ holds the diagram the README embeds: it must match the machine (run `npm run visualize` after a change).
    t.is(fs.readFileSync(path.join(ROOT, 'docs', 'order-lifecycle.dot'), 'utf8'), dot);
    t.is(fs.readFileSync(path.join(ROOT, 'docs', 'order-lifecycle.svg'), 'utf8'), svg);
  } finally {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
});

test('GET /docs/order-lifecycle serves the diagram, a legend and the transitions table (public)', async (t) => {
  const res = await app.request('GET', '/docs/order-lifecycle');
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
  const html = res.text;
  t.true(html.startsWith('<!doctype html>'));
  t.false(html.includes('<?xml'));
  t.deepEqual(svgStateNodes(html).sort(), [...ORDER_STATUSES].sort());
  // The legend is the SVG's own, once (not repeated as an HTML list).
  t.false(html.includes('<h2>Legend</h2>'));
  t.is(html.split('<g id="legend"').length - 1, 1);
  t.is(html.split('>Legend</text>').length - 1, 1);
  t.true(html.includes('triggered by a SELLER</text>'));
  t.true(html.includes('triggered by a BUYER</text>'));
  t.true(html.includes('triggered by a SYSTEM</text>'));
  for (const tr of diagramModel().transitions) {
    t.true(
      html.includes(
        `<tr><td><code>${tr.from}</code></td><td><code>${tr.event}</code></td><td><code>${tr.guard}</code></td><td>${tr.role}</td><td><code>${tr.to}</code></td>`,
      ),
      `${tr.from} ${tr.event}`,
    );
  }
});

test('what the diagram draws is what the running machine does: every status x event x role, decided by nextStatus', (t) => {
  // Independent of the walker: the machine is asked, not read. A transition the walker dropped (no target), a
  // guard drawn under the wrong role, or a guard that lets another role through shows up here.
  const roles = ['BUYER', 'SELLER', 'ADMIN', 'SYSTEM'] as const;
  const events = ['CONFIRM', 'SHIP', 'DELIVER', 'CANCEL', 'EXPIRE'] as const;
  const allowed = new Set<string>();
  for (const from of ORDER_STATUSES) {
    for (const type of events) {
      for (const role of roles) {
        const event = { type, memberId: 1, role } as unknown as Parameters<typeof nextStatus>[1];
        const to = nextStatus(from, event);
        if (to) allowed.add(`${from} ${type} ${role} -> ${to}`);
      }
    }
  }
  const drawn = diagramModel().transitions.map((tr) => `${tr.from} ${tr.event} ${tr.role} -> ${tr.to}`);
  t.deepEqual([...allowed].sort(), drawn.sort());
  t.true(allowed.size >= 6, 'the six transitions of the lifecycle, at least');
});

test("an order's diagram is drawn once per path and is, byte for byte, the drawing of its own title", async (t) => {
  let drawings = 0;
  const service = createOrderDiagramService({
    render: (model, highlight) => {
      drawings++;
      return renderDiagram(model, highlight);
    },
  });
  const shipped = [
    { from: null, to: 'PENDING', changedBy: 7 },
    { from: 'PENDING', to: 'CONFIRMED', changedBy: 3 },
    { from: 'CONFIRMED', to: 'SHIPPED', changedBy: 3 },
  ];
  const expired = [
    { from: null, to: 'PENDING', changedBy: 7 },
    { from: 'PENDING', to: 'CANCELLED', changedBy: null },
  ];
  // The widest and the narrowest characters an order number can hold, and two paths.
  const orders = [
    { orderNumber: '20261129-WWWWWWWWWWWW', status: 'SHIPPED', statusHistory: shipped },
    { orderNumber: '20261129-111111111111', status: 'SHIPPED', statusHistory: shipped },
    { orderNumber: '20261130-MMMMMMMMMMMM', status: 'CANCELLED', statusHistory: expired },
  ];
  for (const order of orders) {
    const steps = order.statusHistory.map((change) => ({
      from: change.from,
      to: change.to,
      bySystem: change.from !== null && change.changedBy === null,
    }));
    const own = await renderDiagram(diagramModel(), {
      current: order.status,
      steps,
      title: `Order ${order.orderNumber}: ${order.status}`,
    });
    t.is(await service.orderDiagram(order), own, order.orderNumber);
    t.true(own.includes(`Order ${order.orderNumber.replace('-', '&#45;')}: ${order.status}`));
  }
  t.is(drawings, 2, 'one drawing per path');
  await service.orderDiagram(orders[0]);
  t.is(drawings, 2, 'asked again: not drawn again');
  // A number of another shape (none is made so) is drawn with its own title.
  const odd = await service.orderDiagram({ ...orders[0], orderNumber: 'legacy-7' });
  t.true(odd.includes('Order legacy&#45;7: SHIPPED'));
  t.is(drawings, 3);
});
