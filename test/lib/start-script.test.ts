// `npm start` (and `npm run dev`) size V8's young generation: under order load most allocations die young,
// and 64 MB semi-spaces (Node 20: 16 MB by default) are scavenged less often (bench/README.md, orders, issue 13:
// less server CPU per order, at the cost of a larger peak RSS). bench:orders starts its server with the
// flags of this script, so the benchmark measures the service as `npm start` runs it.
import fs from 'node:fs';
import test from 'ava';

const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  scripts: Record<string, string>;
};

test('npm start and npm run dev run the server with 64 MB semi-spaces', (t) => {
  for (const script of ['start', 'dev']) {
    t.regex(pkg.scripts[script], /^node --max-semi-space-size=64 --import tsx (--watch )?lib\/server\.ts$/);
  }
});
