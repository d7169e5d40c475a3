// API.md's order JSON (plus `statusHistory`), typed by the one order shape (order-schemas.ts). Money is
// computed in integer cents and rendered as a JSON number with at most 2 decimals.
import { fromCents, toCents } from '../db';
import type { Order } from './order-model';
import type { OrderJson, ShippingAddress } from './order-schemas';

export type { OrderJson, ShippingAddress };

export function orderJson(order: Order): OrderJson {
  return {
    id: order.id,
    orderNumber: order.orderNumber,
    buyerId: order.buyerId,
    status: order.status,
    totalAmount: fromCents(toCents(order.totalAmount)),
    shippingAddress: {
      zipCode: order.zipCode,
      address: order.address,
      addressDetail: order.addressDetail,
      receiverName: order.receiverName,
      receiverPhone: order.receiverPhone,
    },
    items: (order.items ?? []).map((item) => ({
      id: item.id,
      productId: item.productId,
      sellerId: item.sellerId,
      productName: item.productName,
      productPrice: fromCents(toCents(item.productPrice)),
      quantity: item.quantity,
      subtotal: fromCents(toCents(item.subtotal)),
    })),
    statusHistory: (order.history ?? []).map((change) => ({
      from: change.fromStatus,
      to: change.toStatus,
      changedBy: change.changedBy,
      changedAt: change.changedAt.toISOString(),
    })),
    orderedAt: order.orderedAt.toISOString(),
    updatedAt: order.updatedAt.toISOString(),
  };
}
