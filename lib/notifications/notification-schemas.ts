import * as yup from 'yup';
import { strictObject } from '../http/validate';
import { pageEnvelopeSchema, pageQueryFields } from '../http/pagination';
import type { JsonSchema } from '../http/route';

export const notificationListQuery = strictObject({ ...pageQueryFields() });
export type NotificationListQuery = yup.InferType<typeof notificationListQuery>;

export const notificationSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'type', 'payload', 'createdAt', 'readAt'],
  properties: {
    id: { type: 'integer' },
    type: { type: 'string', enum: ['OrderCreated', 'OrderStatusChanged'] },
    payload: {
      type: 'object',
      description:
        'OrderCreated: { sellerId, orderId, orderNumber }; OrderStatusChanged: { buyerId, orderId, orderNumber, from, to }',
      additionalProperties: true,
    },
    createdAt: { type: 'string', format: 'date-time' },
    readAt: { type: ['string', 'null'], format: 'date-time' },
  },
};

export const notificationPageSchema = pageEnvelopeSchema(notificationSchema);
