// `npm run visualize`: draws the order lifecycle from the real machine (actors/order-lifecycle-machine.ts) into
// docs/order-lifecycle.dot and docs/order-lifecycle.svg, offline (Graphviz as WebAssembly). Same code as the
// served diagram. `--out <dir>` writes elsewhere (the tests use it).
import fs from 'node:fs';
import path from 'node:path';
import { diagramDot } from '../lib/order-diagram/diagram-dot';
import { renderDiagram } from '../lib/order-diagram/diagram-svg';
import { diagramModel } from '../lib/order-diagram/diagram-model';

async function writeLifecycleDiagram(outDir: string): Promise<{ dotPath: string; svgPath: string }> {
  const model = diagramModel();
  const dot = diagramDot(model);
  const svg = await renderDiagram(model);
  fs.mkdirSync(outDir, { recursive: true });
  const dotPath = path.join(outDir, 'order-lifecycle.dot');
  const svgPath = path.join(outDir, 'order-lifecycle.svg');
  fs.writeFileSync(dotPath, dot);
  fs.writeFileSync(svgPath, svg);
  return { dotPath, svgPath };
}

const outFlag = process.argv.indexOf('--out');
const outDir = outFlag > -1 ? process.argv[outFlag + 1] : path.join(import.meta.dirname, '..', 'docs');
const { dotPath, svgPath } = await writeLifecycleDiagram(outDir);
process.stdout.write(`wrote ${dotPath}\nwrote ${svgPath}\n`);
