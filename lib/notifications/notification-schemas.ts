// The notification list query and the notification shapes: a union told apart by `type`, each with its own
// payload, so a client knows what `payload` holds without reading prose.
import * as yup from 'yup';
import { ORDER_STATUSES } from '../../actors/order-lifecycle-machine';
import { strictObject } from '../http/validate';
import { pageQueryFields } from '../http/pagination';
import { constString, enumField, idField, pageShape, stringField, timeField } from '../http/response-fields';

export const notificationListQuery = strictObject({ ...pageQueryFields() });
export type NotificationListQuery = yup.InferType<typeof notificationListQuery>;

const ORDER_NUMBER_EXAMPLE = '20261122-7K3QX9M2PA4D';

export const orderCreatedPayloadShape = yup
  .object({ sellerId: idField(), orderId: idField(), orderNumber: stringField() })
  .noUnknown()
  // Always sent: `.defined()` puts it in its notification's `required` (a yup object is optional by default).
  .defined()
  .meta({
    component: 'OrderCreated',
    description: 'To the seller, once per order with their products',
    example: { sellerId: 2, orderId: 1, orderNumber: ORDER_NUMBER_EXAMPLE },
  });
export type OrderCreatedPayload = yup.InferType<typeof orderCreatedPayloadShape>;

export const orderStatusChangedPayloadShape = yup
  .object({
    buyerId: idField(),
    orderId: idField(),
    orderNumber: stringField(),
    from: enumField(ORDER_STATUSES),
    to: enumField(ORDER_STATUSES),
  })
  .noUnknown()
  .defined()
  .meta({
    component: 'OrderStatusChanged',
    description:
      "To the buyer, when a seller moves their order a step (the spec's shipping status change); not on the buyer's own cancellation, which emits no event. To the buyer and the order's sellers when the system cancels an unconfirmed order (ORDER_PENDING_EXPIRY_SECONDS, off by default)",
    example: { buyerId: 3, orderId: 1, orderNumber: ORDER_NUMBER_EXAMPLE, from: 'PENDING', to: 'CONFIRMED' },
  });
export type OrderStatusChangedPayload = yup.InferType<typeof orderStatusChangedPayloadShape>;

const common = {
  id: idField(),
  createdAt: timeField(),
  // Neither the spec nor API.md asks for a read state: the column exists, nothing sets it.
  readAt: timeField()
    .nullable()
    .meta({ description: 'Always null: reserved (nothing marks a notification read yet)' }),
};

const orderCreatedNotification = yup
  .object({ ...common, type: constString('OrderCreated'), payload: orderCreatedPayloadShape })
  .noUnknown()
  .meta({ component: 'OrderCreatedNotification' });

const orderStatusChangedNotification = yup
  .object({ ...common, type: constString('OrderStatusChanged'), payload: orderStatusChangedPayloadShape })
  .noUnknown()
  .meta({ component: 'OrderStatusChangedNotification' });

export type NotificationJson =
  yup.InferType<typeof orderCreatedNotification> | yup.InferType<typeof orderStatusChangedNotification>;

export const notificationShape = yup
  .mixed<NotificationJson>()
  .defined()
  .meta({
    component: 'Notification',
    oneOf: [orderCreatedNotification, orderStatusChangedNotification],
    discriminator: 'type',
    example: {
      id: 1,
      type: 'OrderCreated',
      payload: { sellerId: 2, orderId: 1, orderNumber: ORDER_NUMBER_EXAMPLE },
      createdAt: '2026-11-22T10:41:14.123Z',
      readAt: null,
    },
  });

export const notificationPageShape = pageShape(notificationShape, 'NotificationPage');
