// API.md's order JSON (plus `statusHistory`). Money is computed in integer cents and rendered as a
// JSON number with at most 2 decimals.
import { fromCents, toCents } from '../db';
import type { OrderStatus } from '../../actors/order-lifecycle-machine';
import type { Order } from './order-model';

export interface ShippingAddress {
  zipCode: string;
  address: string;
  addressDetail: string;
  receiverName: string;
  receiverPhone: string;
}

export interface OrderItemJson {
  id: number;
  productId: number;
  sellerId: number;
  productName: string;
  productPrice: number;
  quantity: number;
  subtotal: number;
}

export interface StatusChangeJson {
  from: OrderStatus | null;
  to: OrderStatus;
  changedBy: number | null;
  changedAt: string;
}

export interface OrderJson {
  id: number;
  orderNumber: string;
  buyerId: number;
  status: OrderStatus;
  totalAmount: number;
  shippingAddress: ShippingAddress;
  items: OrderItemJson[];
  statusHistory: StatusChangeJson[];
  orderedAt: string;
  updatedAt: string;
}

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
