// The one-way stack, checked on the source: routes -> lib/<area> -> lib/inventory -> actors/. Runtime
// imports (not `import type`) are read from every file under actors/, lib/ and routes/.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';

const ROOT = path.join(import.meta.dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

interface Import {
  specifier: string;
  /** The imported project file (relative to the root), or null for a package. */
  file: string | null;
  typeOnly: boolean;
}

function importsOf(file: string): Import[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const found: Import[] = [];
  const statements = /^(?:import|export)\s+(type\s+)?(?:[^;'"]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
  const dynamic = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  const add = (specifier: string, typeOnly: boolean) => {
    const resolved = specifier.startsWith('.')
      ? path.normalize(path.join(path.dirname(file), specifier)).replace(/(\.ts)?$/, '.ts')
      : null;
    found.push({ specifier, file: resolved, typeOnly });
  };
  for (const match of text.matchAll(statements)) add(match[2], Boolean(match[1]));
  for (const match of text.matchAll(dynamic)) add(match[1], false);
  return found;
}

const files = ['actors', 'lib', 'routes'].flatMap(sourceFiles);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

test('actors/ imports only xstate and its own files at run time', (t) => {
  const offending = [...graph].flatMap(([file, imports]) =>
    file.startsWith('actors/')
      ? imports
          .filter((i) => !i.typeOnly && i.specifier !== 'xstate' && !i.file?.startsWith('actors/'))
          .map((i) => `${file} -> ${i.specifier}`)
      : [],
  );
  t.deepEqual(offending, []);
});

test('lib/inventory knows nothing of orders; routes never import actors/ at run time', (t) => {
  const offending = [...graph].flatMap(([file, imports]) =>
    imports
      .filter(
        (i) =>
          (file.startsWith('lib/inventory/') && i.file?.startsWith('lib/orders/')) ||
          (file.startsWith('routes/') && !i.typeOnly && i.file?.startsWith('actors/')),
      )
      .map((i) => `${file} -> ${i.specifier}`),
  );
  t.deepEqual(offending, []);
});

test('no import cycle among the run-time imports of actors/, lib/ and routes/', (t) => {
  const cycles: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (file: string, trail: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'visiting') {
      cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'visiting');
    for (const i of graph.get(file) ?? []) {
      if (!i.typeOnly && i.file && graph.has(i.file)) visit(i.file, [...trail, file]);
    }
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  t.deepEqual(cycles, []);
  t.true(graph.size > 50, 'the source files were found');
});
