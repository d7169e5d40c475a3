// Objection models of orders (reads); writes go through order-repository.ts as multi-row INSERTs.
import { BaseModel } from '../db';
import type { OrderStatus } from '../../actors/order-lifecycle-machine';

export class OrderItem extends BaseModel {
  static tableName = 'order_items';

  id!: number;
  orderId!: number;
  productId!: number;
  sellerId!: number;
  productName!: string;
  productPrice!: string | number;
  quantity!: number;
  subtotal!: string | number;
}

export class OrderStatusHistory extends BaseModel {
  static tableName = 'order_status_history';

  id!: number;
  orderId!: number;
  fromStatus!: OrderStatus | null;
  toStatus!: OrderStatus;
  changedBy!: number | null;
  changedAt!: Date;
}

export class Order extends BaseModel {
  static tableName = 'orders';

  id!: number;
  orderNumber!: string;
  buyerId!: number;
  status!: OrderStatus;
  totalAmount!: string | number;
  zipCode!: string;
  address!: string;
  addressDetail!: string;
  receiverName!: string;
  receiverPhone!: string;
  orderedAt!: Date;
  updatedAt!: Date;
  items?: OrderItem[];
  history?: OrderStatusHistory[];

  static get relationMappings() {
    return {
      items: {
        relation: BaseModel.HasManyRelation,
        modelClass: OrderItem,
        join: { from: 'orders.id', to: 'order_items.order_id' },
        modify: (query: { orderBy(column: string): unknown }) => query.orderBy('id'),
      },
      history: {
        relation: BaseModel.HasManyRelation,
        modelClass: OrderStatusHistory,
        join: { from: 'orders.id', to: 'order_status_history.order_id' },
        modify: (query: { orderBy(column: string): unknown }) => query.orderBy('id'),
      },
    };
  }
}
