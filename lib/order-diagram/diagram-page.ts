// The public page GET /docs/order-lifecycle: the diagram drawn from the order machine, inlined as SVG (it
// carries its own legend), and the machine's statuses and transitions as tables (all from the same model).
import type { DiagramModel } from './diagram-model';

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function diagramPageHtml(model: DiagramModel, svg: string): string {
  const stateRows = model.states
    .map(
      (s) =>
        `<tr><td><code>${esc(s.name)}</code></td><td>${esc(s.description)}</td><td>${
          s.name === model.initial ? 'initial' : s.final ? 'final' : ''
        }</td></tr>`,
    )
    .join('\n        ');
  const transitionRows = model.transitions
    .map(
      (t) =>
        `<tr><td><code>${esc(t.from)}</code></td><td><code>${esc(t.event)}</code></td><td><code>${esc(
          t.guard ?? '',
        )}</code></td><td>${esc(t.role ?? '')}</td><td><code>${esc(t.to)}</code></td><td>${esc(t.description)}</td></tr>`,
    )
    .join('\n        ');
  // The SVG from Graphviz starts with an XML prolog and doctype, which do not belong inside HTML.
  const inlineSvg = svg.slice(svg.indexOf('<svg'));
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Order lifecycle</title>
  <style>
    body { font: 15px/1.5 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #1c1917; }
    .diagram svg { max-width: 100%; height: auto; }
    table { border-collapse: collapse; margin: 8px 0 24px; }
    th, td { border: 1px solid #d6d3d1; padding: 4px 10px; text-align: left; }
  </style>
</head>
<body>
  <h1>Order lifecycle</h1>
  <p>Drawn at run time from the order machine the service uses (<code>actors/order-lifecycle-machine.ts</code>, machine
  <code>${esc(model.id)}</code>). An order's own diagram, with its path highlighted, is at
  <code>GET /api/v1/orders/{orderId}/lifecycle</code> (same access as reading the order). <a href="/docs">API documentation</a>.</p>
  <div class="diagram">${inlineSvg}</div>
  <h2>Statuses</h2>
  <table class="states">
    <thead><tr><th>Status</th><th>Meaning</th><th></th></tr></thead>
    <tbody>
        ${stateRows}
    </tbody>
  </table>
  <h2>Transitions</h2>
  <table class="transitions">
    <thead><tr><th>From</th><th>Event</th><th>Guard</th><th>Role</th><th>To</th><th>Effect</th></tr></thead>
    <tbody>
        ${transitionRows}
    </tbody>
  </table>
</body>
</html>
`;
}
