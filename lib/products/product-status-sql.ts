// The one SQL form of "status follows stock" (actors/product-status.ts), generated from the pure rule's
// constants. The caller passes SQL for the status before the change and for the stock after it. Assign
// `status` FIRST in an UPDATE's SET list: MySQL evaluates assignments left to right on the updated row,
// SQLite on the old one; first, both see the old values.
import type { Knex } from 'knex';
import {
  IN_STOCK_STATUS,
  OUT_OF_STOCK_STATUS,
  STOCK_INDEPENDENT_STATUSES,
} from '../../actors/product-status';

/** A SQL snippet with its `?` bindings. */
export interface SqlPart {
  sql: string;
  bindings: Knex.Value[];
}

export const sql = (text: string, ...bindings: Knex.Value[]): SqlPart => ({ sql: text, bindings });

const independent = STOCK_INDEPENDENT_STATUSES.map((status) => `'${status}'`).join(', ');

/** `CASE ... END` giving the status that follows `stock` for a product whose status is `status`. */
export function statusFollowingStockSql(status: SqlPart, stock: SqlPart): SqlPart {
  return {
    sql: `CASE WHEN ${status.sql} IN (${independent}) THEN ${status.sql} WHEN ${stock.sql} > 0 THEN '${IN_STOCK_STATUS}' ELSE '${OUT_OF_STOCK_STATUS}' END`,
    bindings: [...status.bindings, ...status.bindings, ...stock.bindings],
  };
}

/** The same, as a knex raw value for an UPDATE's SET list. */
export function statusFollowingStockRaw(db: Knex, status: SqlPart, stock: SqlPart): Knex.Raw {
  const part = statusFollowingStockSql(status, stock);
  return db.raw(part.sql, part.bindings);
}
