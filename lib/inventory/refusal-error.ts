// The client-facing error of a refused order line (API.md: 404 for an unknown or deleted product, 409
// otherwise, naming the product). The reasons themselves are decided in actors/stock-rules.ts.
// Only a buyer orders, and a buyer may not read a product that is not public (a DRAFT is its seller's):
// the error names such a product by id only, so refusals cannot be used to enumerate unreleased names.
import { ConflictError, NotFoundError, type AppError } from '../errors';
import { isPublic } from '../../actors/product-status';
import type { ProductView, RefusalReason } from '../../actors/stock-rules';

export function refusalError(
  reason: RefusalReason,
  productId: number,
  view: Pick<ProductView, 'name' | 'status'> | null | undefined,
): AppError {
  const label =
    view && isPublic(view.status) ? `product ${productId} (${view.name})` : `product ${productId}`;
  if (reason === 'NOT_FOUND') return new NotFoundError(`Product ${productId} not found`);
  if (reason === 'NOT_ON_SALE')
    return new ConflictError('PRODUCT_NOT_ON_SALE', `The ${label} is not on sale`);
  return new ConflictError('INSUFFICIENT_STOCK', `Insufficient stock for ${label}`);
}
