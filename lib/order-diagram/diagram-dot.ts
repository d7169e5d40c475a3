// The order-lifecycle diagram renderer: DOT generated from the machine model (diagram-model.ts) and rendered to SVG
// offline with Graphviz compiled to WebAssembly (@viz-js/viz). Used by `npm run visualize`, GET
// /docs/order-lifecycle and GET /api/v1/orders/:orderId/lifecycle, so all three show the same drawing.
// Nodes and edges carry stable ids and classes (`state`, `current`, `visited`, `transition`, `taken`,
// `role-SELLER`) so pages, tests and stylesheets can find them in the SVG.
import { instance, type Viz } from '@viz-js/viz';
import type { DiagramModel, DiagramTransition } from './diagram-model';

/** What to highlight for one order: its current state and the steps it took (from its status history). */
export interface DiagramHighlight {
  current: string;
  /**
   * `bySystem` tells apart transitions between the same two states (PENDING -> CANCELLED: the buyer's CANCEL or
   * the system's EXPIRE); the history knows it by `changedBy` (null: the system).
   */
  steps: Array<{ from: string | null; to: string; bySystem?: boolean }>;
  title?: string;
}

export const ROLE_COLORS: Record<string, string> = {
  SELLER: '#1f5fbf',
  BUYER: '#c2410c',
  // The service itself (the expiry sweep), not a member.
  SYSTEM: '#7e22ce',
};
export const DEFAULT_ROLE_COLOR = '#555555';
export const CURRENT_FILL = '#16a34a';
export const VISITED_FILL = '#bbf7d0';
export const TAKEN_COLOR = '#15803d';

/** A DOT double-quoted string. */
function q(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** Text inside a Graphviz HTML-like label. */
function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function attrs(list: Record<string, string | number>): string {
  return Object.entries(list)
    .map(([k, v]) =>
      k === 'label' && typeof v === 'string' && v.startsWith('<') ? `${k}=${v}` : `${k}=${q(String(v))}`,
    )
    .join(', ');
}

export function transitionId(t: DiagramTransition): string {
  return `transition-${t.from}-${t.event}-${t.to}`;
}

function isTaken(t: DiagramTransition, highlight: DiagramHighlight | undefined): boolean {
  return !!highlight?.steps.some(
    (s) =>
      s.from === t.from &&
      s.to === t.to &&
      (s.bySystem === undefined || s.bySystem === (t.role === 'SYSTEM')),
  );
}

export function diagramDot(model: DiagramModel, highlight?: DiagramHighlight): string {
  const visited = new Set(highlight?.steps.map((s) => s.to) ?? []);
  const lines: string[] = [];
  lines.push(`digraph ${q(model.id)} {`);
  const graph: Record<string, string | number> = {
    rankdir: 'LR',
    fontname: 'Helvetica',
    bgcolor: 'white',
    pad: 0.3,
    nodesep: 0.6,
    ranksep: 0.9,
    id: 'order-lifecycle',
  };
  if (highlight?.title) {
    graph.label = highlight.title;
    graph.labelloc = 't';
    graph.fontsize = 16;
  }
  lines.push(`  graph [${attrs(graph)}];`);
  lines.push('  node [fontname="Helvetica", fontsize=13, shape=box, style="rounded,filled", penwidth=1.4];');
  lines.push('  edge [fontname="Helvetica", fontsize=10, penwidth=1.4, arrowsize=0.8];');
  lines.push(
    `  "__start" [id="state-start", class="start", shape=point, width=0.18, label="", fillcolor="black", tooltip="initial state"];`,
  );
  for (const state of model.states) {
    const isCurrent = highlight?.current === state.name;
    const isVisited = visited.has(state.name);
    const classes = [
      'state',
      isCurrent ? 'current' : '',
      isVisited && !isCurrent ? 'visited' : '',
      state.final ? 'final' : '',
    ]
      .filter(Boolean)
      .join(' ');
    const fill = isCurrent ? CURRENT_FILL : isVisited ? VISITED_FILL : '#f5f5f4';
    const fontColor = isCurrent ? 'white' : highlight && !isVisited ? '#78716c' : 'black';
    const description = state.description
      ? `<BR/><FONT POINT-SIZE="10">${html(state.description)}</FONT>`
      : '';
    const label = `<<B>${html(state.name)}</B>${description}>`;
    const node: Record<string, string | number> = {
      id: `state-${state.name}`,
      class: classes,
      label,
      fillcolor: fill,
      fontcolor: fontColor,
      color: isCurrent ? TAKEN_COLOR : '#44403c',
      tooltip: state.description || state.name,
    };
    if (state.final) node.peripheries = 2;
    if (isCurrent) node.penwidth = 3;
    lines.push(`  ${q(state.name)} [${attrs(node)}];`);
  }
  const startTaken = !!highlight?.steps.some((s) => s.from === null && s.to === model.initial);
  lines.push(
    `  "__start" -> ${q(model.initial)} [id="transition-start", class="transition${startTaken ? ' taken' : ''}"${
      startTaken ? `, color="${TAKEN_COLOR}", penwidth=3` : ''
    }];`,
  );
  for (const t of model.transitions) {
    const taken = isTaken(t, highlight);
    const roleColor = t.role ? (ROLE_COLORS[t.role] ?? DEFAULT_ROLE_COLOR) : DEFAULT_ROLE_COLOR;
    const labelLines = [`<B>${html(t.event)}</B>`];
    if (t.guard) labelLines.push(`[${html(t.guard)}]`);
    if (t.role) labelLines.push(`by ${html(t.role)}`);
    const edge: Record<string, string | number> = {
      id: transitionId(t),
      class: ['transition', t.role ? `role-${t.role}` : '', taken ? 'taken' : ''].filter(Boolean).join(' '),
      label: `<${labelLines.join('<BR/>')}>`,
      color: taken ? TAKEN_COLOR : roleColor,
      fontcolor: roleColor,
      tooltip: t.description || t.event,
    };
    if (taken) edge.penwidth = 3.2;
    else if (highlight) edge.style = 'dashed';
    lines.push(`  ${q(t.from)} -> ${q(t.to)} [${attrs(edge)}];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

let vizPromise: Promise<Viz> | null = null;

/** DOT -> SVG with the wasm Graphviz; the instance is created once (~180 ms) and reused. */
export async function renderSvg(dot: string): Promise<string> {
  // A failed start is not kept: the next drawing tries again.
  vizPromise ??= instance().catch((err: unknown) => {
    vizPromise = null;
    throw err;
  });
  const viz = await vizPromise;
  const result = viz.render(dot, { format: 'svg', engine: 'dot' });
  if (result.status !== 'success') {
    throw new Error(`Graphviz failed: ${result.errors.map((e) => e.message).join('; ')}`);
  }
  return result.output;
}
