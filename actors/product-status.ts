// A product's status, modelled once (as the order machine models an order's): which statuses exist and
// the rule "status follows stock". DRAFT and DELETED are the seller's choices and never move with stock;
// a listed product is ON_SALE while it has stock and SOLD_OUT at 0. Every stock change uses this rule:
// a deduction, a cancellation's restore, a seller's stock PATCH or status choice, a new product, and the
// stock actor's in-memory view. The SQL form (lib/products/product-status-sql.ts) is generated from the
// same constants, so the database and the actors cannot disagree.

export const PRODUCT_STATUSES = ['DRAFT', 'ON_SALE', 'SOLD_OUT', 'DELETED'] as const;
export type ProductStatus = (typeof PRODUCT_STATUSES)[number];

/** Statuses a seller sets that stock never changes. */
export const STOCK_INDEPENDENT_STATUSES = ['DRAFT', 'DELETED'] as const satisfies readonly ProductStatus[];
/** The status of a listed product that has stock. */
export const IN_STOCK_STATUS = 'ON_SALE' satisfies ProductStatus;
/** The status of a listed product without stock. */
export const OUT_OF_STOCK_STATUS = 'SOLD_OUT' satisfies ProductStatus;

function isStockIndependent(status: ProductStatus): boolean {
  return (STOCK_INDEPENDENT_STATUSES as readonly ProductStatus[]).includes(status);
}

/** The status a product with `status` has once its stock is `stock`. */
export function statusFollowingStock(status: ProductStatus, stock: number): ProductStatus {
  if (isStockIndependent(status)) return status;
  return stock > 0 ? IN_STOCK_STATUS : OUT_OF_STOCK_STATUS;
}

/** Statuses anyone may see (the public catalogue); DRAFT and DELETED are visible to their seller only. */
export const PUBLIC_STATUSES = [
  IN_STOCK_STATUS,
  OUT_OF_STOCK_STATUS,
] as const satisfies readonly ProductStatus[];

export function isPublic(status: ProductStatus): boolean {
  return (PUBLIC_STATUSES as readonly ProductStatus[]).includes(status);
}
