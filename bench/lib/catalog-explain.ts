// EXPLAIN of the catalogue's list queries, built by the service's own query builders (lib/products/
// product-repository.ts), so the plans shown are the plans the endpoints get. Used by bench/catalog.ts and
// runnable alone: `DATABASE_URL=mysql://... node --import tsx bench/lib/catalog-explain.ts` (or DATA_DIR=... for SQLite).
import { pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import type { Db } from '../../lib/db';
import { dialect } from '../../lib/db';
import {
  applyCursor,
  applyFilters,
  applySort,
  keywordWindowEndQuery,
  keywordWindowQuery,
  parseSort,
} from '../../lib/products/product-repository';

export interface PlanRow {
  query: string;
  table: string;
  type: string;
  key: string | null;
  rows: number;
  extra: string;
}

export async function explainCatalog(db: Db): Promise<PlanRow[]> {
  const products = () => db('products').select('*');
  const some = await db('products')
    .where('status', 'ON_SALE')
    .orderBy('id')
    .first('id', 'category_id', 'seller_id', 'created_at');
  const deep = await db('products')
    .whereIn('status', ['ON_SALE', 'SOLD_OUT'])
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .offset(90_000)
    .first('id', 'created_at');
  const cursor = deep ?? some;
  const windowEnd = (await keywordWindowEndQuery(db).first()) as
    { created_at: Knex.Value; id: number } | undefined;
  const queries: Array<[string, () => { toSQL(): { sql: string; bindings: readonly unknown[] } }]> = [
    [
      'list default (createdAt desc)',
      () => applySort(applyFilters(db, products(), null, {}), parseSort('createdAt,desc')).limit(20),
    ],
    ['list count', () => applyFilters(db, db('products').count({ n: '*' }), null, {})],
    [
      'list price asc',
      () => applySort(applyFilters(db, products(), null, {}), parseSort('price,asc')).limit(20),
    ],
    [
      'list salesCount desc',
      () => applySort(applyFilters(db, products(), null, {}), parseSort('salesCount,desc')).limit(20),
    ],
    [
      'list status=ON_SALE price desc',
      () =>
        applySort(applyFilters(db, products(), null, { status: 'ON_SALE' }), parseSort('price,desc')).limit(
          20,
        ),
    ],
    [
      'list categoryId',
      () =>
        applySort(
          applyFilters(db, products(), null, { categoryId: some.category_id }),
          parseSort('createdAt,desc'),
        ).limit(20),
    ],
    [
      'list sellerId',
      () =>
        applySort(
          applyFilters(db, products(), null, { sellerId: some.seller_id }),
          parseSort('createdAt,desc'),
        ).limit(20),
    ],
    [
      'list keyword',
      () =>
        applySort(applyFilters(db, products(), null, { keyword: 'lamp' }), parseSort('createdAt,desc')).limit(
          20,
        ),
    ],
    // What the list page of a keyword with more than KEYWORD_WINDOW_ROWS matches runs first
    // (product-repository.ts): where the newest rows end, then the walk through them; the index query
    // above for a rarer keyword, or when the newest rows do not hold the page.
    ['list keyword, where the newest rows end', () => keywordWindowEndQuery(db)],
    [
      'list keyword, newest rows first',
      () =>
        keywordWindowQuery(
          db,
          null,
          { keyword: 'lamp' },
          { offset: 0, limit: 20 },
          windowEnd ? { createdAt: windowEnd.created_at, id: Number(windowEnd.id) } : null,
        ),
    ],
    // Served by the name index (migration 20261122000013); a 1-2 character keyword keeps the scan.
    [
      'list keyword count',
      () => applyFilters(db, db('products').count({ n: '*' }), null, { keyword: 'lamp' }),
    ],
    [
      'list keyword, 2 characters',
      () =>
        applySort(applyFilters(db, products(), null, { keyword: 'mp' }), parseSort('createdAt,desc')).limit(
          20,
        ),
    ],
    [
      'list price range',
      () =>
        applySort(
          applyFilters(db, products(), null, { minPrice: 10_000, maxPrice: 20_000 }),
          parseSort('price,asc'),
        ).limit(20),
    ],
    [
      'list offset 90k',
      () =>
        applySort(applyFilters(db, products(), null, {}), parseSort('createdAt,desc'))
          .offset(90_000)
          .limit(20),
    ],
    [
      'cursor first page',
      () => applySort(applyFilters(db, products(), null, {}), parseSort('createdAt,desc')).limit(21),
    ],
    [
      'cursor at depth 90k',
      () =>
        applySort(
          applyCursor(applyFilters(db, products(), null, {}), {
            createdAt: new Date(cursor.created_at),
            id: cursor.id,
          }),
          parseSort('createdAt,desc'),
        ).limit(21),
    ],
    [
      'cursor + categoryId',
      () =>
        applySort(
          applyCursor(applyFilters(db, products(), null, { categoryId: some.category_id }), {
            createdAt: new Date(cursor.created_at),
            id: cursor.id,
          }),
          parseSort('createdAt,desc'),
        ).limit(21),
    ],
    [
      'popular',
      () =>
        db('products')
          .select('*')
          .where('status', 'ON_SALE')
          .orderBy([
            { column: 'sales_count', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(10),
    ],
  ];
  const out: PlanRow[] = [];
  const mysql = dialect.isMysql(db);
  for (const [name, build] of queries) {
    const { sql, bindings } = build().toSQL();
    if (!mysql) {
      // SQLite's EXPLAIN QUERY PLAN: one line per step, no row estimates.
      const steps = (await db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as readonly Knex.Value[])) as Array<{
        detail: string;
      }>;
      for (const step of steps)
        out.push({ query: name, table: '-', type: 'plan', key: null, rows: 0, extra: step.detail });
      continue;
    }
    const [rows] = (await db.raw(`EXPLAIN ${sql}`, bindings as readonly Knex.Value[])) as unknown as [
      Array<Record<string, unknown>>,
    ];
    for (const row of rows) {
      out.push({
        query: name,
        table: String(row.table),
        type: String(row.type),
        key: (row.key as string) ?? null,
        rows: Number(row.rows),
        extra: String(row.Extra ?? ''),
      });
    }
  }
  return out;
}

export function planTable(plans: PlanRow[]): string {
  const lines = ['| query | table | access | index | est. rows | extra |', '|---|---|---|---|---|---|'];
  for (const p of plans)
    lines.push(`| ${p.query} | ${p.table} | ${p.type} | ${p.key ?? '-'} | ${p.rows} | ${p.extra} |`);
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { loadConfig } = await import('../../lib/config');
  const { createDb } = await import('../../lib/db');
  const db = createDb(loadConfig().database);
  try {
    console.log(planTable(await explainCatalog(db)));
  } finally {
    await db.destroy();
  }
}
