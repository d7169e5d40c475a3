// All of the inventory's stock SQL. Every deduction is a guarded UPDATE (`... WHERE stock_quantity >= ?
// AND catalog_version = ?`, affected rows checked), so no process can oversell, nor charge a price or
// name a seller's edit has replaced, whatever its in-memory view says. Both inventory
// modes and cancellations use these statements; the status each write leaves follows the stock by the
// one rule in actors/product-status.ts.
import type { Knex } from 'knex';
import { affectedRows, dialect, runPrebuilt, toCents } from '../db';
import { sql, statusFollowingStockRaw, statusFollowingStockSql } from '../products/product-status-sql';
import type { ProductStatus } from '../../actors/product-status';
import {
  MAX_STOCK,
  type JudgedStockChange,
  type ProductView,
  type StockChange,
} from '../../actors/stock-rules';

interface ProductRow {
  id: number;
  seller_id: number;
  name: string;
  price: string | number;
  status: ProductStatus;
  stock_quantity: number;
  catalog_version: number;
}

const COLUMNS = ['id', 'seller_id', 'name', 'price', 'status', 'stock_quantity', 'catalog_version'];

function toView(row: ProductRow): ProductView {
  return {
    id: row.id,
    sellerId: row.seller_id,
    name: row.name,
    priceCents: toCents(row.price),
    status: row.status,
    stock: row.stock_quantity,
    catalogVersion: Number(row.catalog_version),
  };
}

/** Reads products by id, in id order; `forUpdate` locks them (MySQL; SQLite serialises writers anyway). */
export async function loadProductViews(
  db: Knex,
  ids: number[],
  options: { forUpdate?: boolean } = {},
): Promise<Map<number, ProductView>> {
  const query = db('products').whereIn('id', ids).orderBy('id').select(COLUMNS);
  if (options.forUpdate) query.forUpdate();
  const rows = (await query) as ProductRow[];
  return new Map(rows.map((row) => [row.id, toView(row)]));
}

export async function loadProductView(db: Knex, id: number): Promise<ProductView | null> {
  return (await loadProductViews(db, [id])).get(id) ?? null;
}

/**
 * Deducts each product's total in one guarded UPDATE per product (id order, so concurrent writers lock
 * rows in the same order). Returns the ids whose guard refused (another process sold the stock, the
 * product left ON_SALE, or a seller's edit changed its catalog version since it was judged); the caller
 * rolls back. `status` is assigned first (see product-status-sql.ts).
 */
export async function deductStock(
  trx: Knex.Transaction,
  changes: JudgedStockChange[],
  now: Date,
): Promise<number[]> {
  const refused: number[] = [];
  for (const { productId, quantity, catalogVersion } of [...changes].sort(
    (a, b) => a.productId - b.productId,
  )) {
    const result = await trx('products')
      .where('id', productId)
      .andWhere('status', 'ON_SALE')
      .andWhere('catalog_version', catalogVersion)
      .andWhere('stock_quantity', '>=', quantity)
      .update({
        status: statusFollowingStockRaw(trx, sql('status'), sql('stock_quantity - ?', quantity)),
        stock_quantity: trx.raw('stock_quantity - ?', [quantity]),
        sales_count: trx.raw('sales_count + ?', [quantity]),
        updated_at: now,
      });
    if (affectedRows(result) !== 1) refused.push(productId);
  }
  return refused;
}

// The status rule with the stock after the change, `stock_quantity - ?`: `status` binds nothing, so the
// rule's one binding is that quantity (checked here, once).
const STATUS_AFTER_DEDUCTION = statusFollowingStockSql(sql('status'), sql('stock_quantity - ?', 0));
if (STATUS_AFTER_DEDUCTION.bindings.length !== 1) throw new Error('the status rule must bind only the stock');

/** Products per batched UPDATE (bindings stay well under every driver's limit). */
const BATCH_CHUNK = 500;

// The batched UPDATE's text depends only on the database and how many products it names: built once per count.
const batchTexts = { mysql: new Map<number, string>(), sqlite: new Map<number, string>() };

/**
 * MySQL/MariaDB: a CASE per column picks each product's numbers; the rows are locked in primary-key order (`id IN`
 * on the primary key), as the per-product form does.
 */
function mysqlBatchText(count: number): string {
  const whens = (then: string) =>
    `CASE id ${new Array<string>(count).fill(`WHEN ? THEN ${then}`).join(' ')} END`;
  return (
    `update \`products\` set \`status\` = ${whens(STATUS_AFTER_DEDUCTION.sql)}, ` +
    `\`stock_quantity\` = stock_quantity - ${whens('?')}, ` +
    `\`sales_count\` = sales_count + ${whens('?')}, \`updated_at\` = ? ` +
    `where \`id\` in (${new Array<string>(count).fill('?').join(', ')}) and \`status\` = ? ` +
    `and \`catalog_version\` = ${whens('?')} and \`stock_quantity\` >= ${whens('?')}`
  );
}

// The status rule with the stock after the change taken from the VALUES row (column2: the quantity).
const SQLITE_STATUS_AFTER_DEDUCTION = statusFollowingStockSql(
  sql('status'),
  sql('stock_quantity - v.column2'),
);
if (SQLITE_STATUS_AFTER_DEDUCTION.bindings.length !== 0)
  throw new Error('the status rule must bind nothing here');

/**
 * SQLite: one `(id, quantity, catalog version)` VALUES row per product, joined on the primary key (UPDATE ... FROM).
 * Each product's numbers are found once, where a CASE per column would test every product's WHEN on every row
 * (n^2: ~640 us for a statement of ~128 products in the cart benchmark, in the service's own process).
 */
function sqliteBatchText(count: number): string {
  return (
    `update \`products\` set \`status\` = ${SQLITE_STATUS_AFTER_DEDUCTION.sql}, ` +
    '`stock_quantity` = stock_quantity - v.column2, `sales_count` = sales_count + v.column2, `updated_at` = ? ' +
    `from (values ${new Array<string>(count).fill('(?, ?, ?)').join(', ')}) as v ` +
    'where `products`.`id` = v.column1 and `products`.`status` = ? ' +
    'and `products`.`catalog_version` = v.column3 and `products`.`stock_quantity` >= v.column2'
  );
}

function batchText(mysql: boolean, count: number): string {
  const texts = mysql ? batchTexts.mysql : batchTexts.sqlite;
  let text = texts.get(count);
  if (text === undefined) texts.set(count, (text = mysql ? mysqlBatchText(count) : sqliteBatchText(count)));
  return text;
}

/** The batched UPDATE's bindings, in the order of `batchText`'s placeholders. */
function batchBindings(mysql: boolean, chunk: JudgedStockChange[], now: Date): Knex.Value[] {
  const bindings: Knex.Value[] = [];
  if (!mysql) {
    bindings.push(now);
    for (const change of chunk) bindings.push(change.productId, change.quantity, change.catalogVersion);
    bindings.push('ON_SALE');
    return bindings;
  }
  // status, stock_quantity, sales_count: one (id, quantity) pair per product each
  for (let column = 0; column < 3; column++)
    for (const change of chunk) bindings.push(change.productId, change.quantity);
  bindings.push(now);
  for (const change of chunk) bindings.push(change.productId);
  bindings.push('ON_SALE');
  for (const change of chunk) bindings.push(change.productId, change.catalogVersion);
  for (const change of chunk) bindings.push(change.productId, change.quantity);
  return bindings;
}

/**
 * The group commit's deduction: ONE guarded UPDATE for many products (MySQL: a CASE per column; SQLite: a
 * VALUES row per product), so a batch over 64 products costs one round trip, not 64. Each product's catalog
 * version is one more bound value. Returns false when any product's guard refused (the caller rolls back and has
 * the products re-read); which one does not matter then, the whole batch decides again. The statement is built
 * as text (knex's builder took ~125 us for 32 products), `status` first; its text is built once per product count
 * and its bindings in one pass. On SQLite a batch is a few statements of power-of-two sizes
 * (`dialect.statementSizes`), whose texts repeat, so they are compiled once.
 */
export async function deductStockBatch(
  trx: Knex.Transaction,
  changes: JudgedStockChange[],
  now: Date,
): Promise<boolean> {
  const sorted = [...changes].sort((a, b) => a.productId - b.productId);
  const mysql = dialect.isMysql(trx);
  let start = 0;
  for (const size of dialect.statementSizes(trx, sorted.length, BATCH_CHUNK)) {
    const chunk = sorted.slice(start, (start += size));
    const result = await runPrebuilt(trx, batchText(mysql, chunk.length), batchBindings(mysql, chunk, now));
    if (dialect.rawWriteResult(trx, result).affectedRows !== chunk.length) return false;
  }
  return true;
}

/**
 * Gives cancelled quantities back (stock and salesCount); the status follows the stock (SOLD_OUT lifts). The stock
 * stops at MAX_STOCK (a seller who set it there meanwhile): it never exceeds what the API accepts and answers, and a
 * restore never lowers it (a row above the bound, written before the bound held here, keeps its units).
 */
export async function restoreStock(trx: Knex.Transaction, changes: StockChange[], now: Date): Promise<void> {
  for (const { productId, quantity } of [...changes].sort((a, b) => a.productId - b.productId)) {
    await trx('products')
      .where('id', productId)
      .update({
        status: statusFollowingStockRaw(trx, sql('status'), sql('stock_quantity + ?', quantity)),
        stock_quantity: trx.raw(
          'CASE WHEN stock_quantity >= ? THEN stock_quantity WHEN stock_quantity > ? THEN ? ELSE stock_quantity + ? END',
          [MAX_STOCK, MAX_STOCK - quantity, MAX_STOCK, quantity],
        ),
        sales_count: trx.raw('CASE WHEN sales_count >= ? THEN sales_count - ? ELSE 0 END', [
          quantity,
          quantity,
        ]),
        updated_at: now,
      });
  }
}
