// The client-facing error of a refused order line (API.md: 404 for an unknown or deleted product, 409
// otherwise, naming the product). The reasons themselves are decided in actors/stock-rules.ts.
import { ConflictError, NotFoundError, type AppError } from '../errors';
import type { RefusalReason } from '../../actors/stock-rules';

export function refusalError(reason: RefusalReason, productId: number, name?: string): AppError {
  const label = name ? `product ${productId} (${name})` : `product ${productId}`;
  if (reason === 'NOT_FOUND') return new NotFoundError(`Product ${productId} not found`);
  if (reason === 'NOT_ON_SALE')
    return new ConflictError('PRODUCT_NOT_ON_SALE', `The ${label} is not on sale`);
  return new ConflictError('INSUFFICIENT_STOCK', `Insufficient stock for ${label}`);
}
