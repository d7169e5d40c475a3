// Finishes Graphviz's SVG for the web: it scales to its container (Graphviz writes a fixed width in points,
// which a 1000 px column cut off), and it carries its own legend, so the file explains itself wherever it
// is shown (the README, an order's own diagram opened directly, the /docs page).
import type { DiagramModel } from './diagram-model';
import {
  CURRENT_FILL,
  DEFAULT_ROLE_COLOR,
  diagramDot,
  renderSvg,
  ROLE_COLORS,
  TAKEN_COLOR,
  VISITED_FILL,
  type DiagramHighlight,
} from './diagram-dot';

const STATE_FILL = '#f5f5f4';
const BORDER = '#44403c';
// Legend geometry, in the SVG's own units (points).
const PAD = 16;
const ROW = 20;
const TITLE = 24;
const COLUMN = 330;
const SWATCH = 30;

type Swatch =
  | { kind: 'box'; fill: string; double?: boolean }
  | { kind: 'line'; color: string; width?: number; dashed?: boolean }
  | { kind: 'start' };

interface LegendItem {
  id: string;
  swatch: Swatch;
  text: string;
}

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** What the drawing's colours and line styles mean; the roles come from the machine. */
export function legendItems(model: DiagramModel): LegendItem[] {
  const roles = [...new Set(model.transitions.map((t) => t.role).filter((r): r is string => !!r))];
  return [
    { id: 'status', swatch: { kind: 'box', fill: STATE_FILL }, text: 'an order status' },
    { id: 'final', swatch: { kind: 'box', fill: STATE_FILL, double: true }, text: 'a final status' },
    { id: 'initial', swatch: { kind: 'start' }, text: 'where every order starts' },
    ...roles.map((role) => ({
      id: `role-${role}`,
      swatch: { kind: 'line' as const, color: ROLE_COLORS[role] ?? DEFAULT_ROLE_COLOR },
      text: `EVENT [guard] triggered by a ${role}`,
    })),
    { id: 'current', swatch: { kind: 'box', fill: CURRENT_FILL }, text: "an order's current status" },
    { id: 'visited', swatch: { kind: 'box', fill: VISITED_FILL }, text: 'statuses the order went through' },
    {
      id: 'taken',
      swatch: { kind: 'line', color: TAKEN_COLOR, width: 3.2 },
      text: 'transitions the order took',
    },
    {
      id: 'not-taken',
      swatch: { kind: 'line', color: DEFAULT_ROLE_COLOR, dashed: true },
      text: 'transitions it did not take',
    },
  ];
}

function drawSwatch(swatch: Swatch, x: number, y: number): string {
  const mid = y - 4;
  if (swatch.kind === 'start') {
    return (
      `<circle cx="${x + 4}" cy="${mid}" r="4" fill="black"/>` +
      `<path d="M${x + 8},${mid} L${x + SWATCH - 6},${mid}" stroke="black" stroke-width="1.4"/>` +
      `<polygon points="${x + SWATCH},${mid} ${x + SWATCH - 7},${mid - 3.5} ${x + SWATCH - 7},${mid + 3.5}" fill="black"/>`
    );
  }
  if (swatch.kind === 'line') {
    const dash = swatch.dashed ? ' stroke-dasharray="5,2"' : '';
    return `<path d="M${x},${mid} L${x + SWATCH},${mid}" stroke="${swatch.color}" stroke-width="${swatch.width ?? 1.4}"${dash}/>`;
  }
  const box = (inset: number) =>
    `<rect x="${x + inset}" y="${mid - 7 + inset}" width="${SWATCH - 2 * inset}" height="${14 - 2 * inset}" rx="3" fill="${
      inset === 0 ? swatch.fill : 'none'
    }" stroke="${BORDER}" stroke-width="1.2"/>`;
  return box(0) + (swatch.double ? box(3) : '');
}

/** The legend group for a drawing `width` wide, and its height. */
function legendGroup(items: LegendItem[], width: number, top: number): { svg: string; height: number } {
  const columns = Math.max(1, Math.floor((width - 2 * PAD) / COLUMN));
  const rows = Math.ceil(items.length / columns);
  const height = TITLE + rows * ROW + PAD;
  const parts = [
    `<g id="legend" class="legend" transform="translate(0 ${top})">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="white"/>`,
    `<path d="M${PAD},0.5 L${width - PAD},0.5" stroke="#d6d3d1" stroke-width="1"/>`,
    `<text x="${PAD}" y="${TITLE - 6}" font-family="Helvetica,sans-serif" font-size="13" font-weight="bold">Legend</text>`,
  ];
  items.forEach((item, index) => {
    const x = PAD + Math.floor(index / rows) * COLUMN;
    const y = TITLE + (index % rows) * ROW + 14;
    parts.push(
      `<g class="legend-item" id="legend-${esc(item.id)}">${drawSwatch(item.swatch, x, y)}` +
        `<text x="${x + SWATCH + 8}" y="${y}" font-family="Helvetica,sans-serif" font-size="12">${esc(item.text)}</text></g>`,
    );
  });
  parts.push('</g>');
  return { svg: parts.join('\n'), height };
}

/**
 * Makes Graphviz's SVG scale to its container (width 100%, the height following from the viewBox; no fixed
 * size in points) and appends the legend below the drawing, growing the viewBox to hold it.
 */
export function finishSvg(svg: string, model: DiagramModel): string {
  const open = /<svg width="[\d.]+pt" height="[\d.]+pt"\s+viewBox="([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)"/.exec(
    svg,
  );
  if (!open) throw new Error('Unexpected Graphviz SVG: no sized <svg> element with a viewBox');
  const [minX, minY, width, height] = open.slice(1).map(Number);
  const legend = legendGroup(legendItems(model), width, minY + height);
  const total = height + legend.height;
  const root =
    `<svg width="100%" viewBox="${minX} ${minY} ${width} ${total}" preserveAspectRatio="xMidYMin meet"` +
    ` style="max-width:100%;height:auto"`;
  const end = svg.lastIndexOf('</svg>');
  return `${svg.slice(0, open.index)}${root}${svg.slice(open.index + open[0].length, end)}${legend.svg}\n</svg>\n`;
}

/** DOT -> finished SVG: the one drawing `npm run visualize`, /docs/order-lifecycle and an order's diagram share. */
export async function renderDiagram(model: DiagramModel, highlight?: DiagramHighlight): Promise<string> {
  return finishSvg(await renderSvg(diagramDot(model, highlight)), model);
}
