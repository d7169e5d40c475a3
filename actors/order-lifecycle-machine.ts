// The order lifecycle: the single source of valid order transitions. The order service decides every
// status change with the pure `transition()` API on a snapshot restored from the persisted status; the
// tests and the visualizer read the same definition. Each transition's `meta` names the role that may
// trigger it; the guards check that role on the event (ownership is checked by the service, which has
// the database). The status list and the seller's events are derived from this definition. One transition
// belongs to no member: EXPIRE, the system's cancellation of a PENDING order left unconfirmed too long
// (ORDER_PENDING_EXPIRY_SECONDS, lib/orders/order-expiry.ts); it records no member as its author.
import { assign, setup, transition, type StateValueFrom } from 'xstate';
import { walkMachine } from './machine-walk';

export type OrderRole = 'BUYER' | 'SELLER';

/** Who asks for the change: the member's id and role (the guards look at the role). */
export interface TransitionActor {
  memberId: number;
  role: OrderRole | 'ADMIN';
}

export type OrderLifecycleEvent =
  | ({ type: 'CONFIRM' } & TransitionActor)
  | ({ type: 'SHIP' } & TransitionActor)
  | ({ type: 'DELIVER' } & TransitionActor)
  | ({ type: 'CANCEL' } & TransitionActor)
  | { type: 'EXPIRE'; role: 'SYSTEM' };

export interface OrderLifecycleContext {
  /** Member who made the last change (null for the initial PENDING and for a system change). */
  changedBy: number | null;
}

/** Who is told of a status change (an `OrderStatusChanged` notification): the order's buyer, its sellers. */
export type Notified = 'BUYER' | 'SELLERS';

export interface TransitionMeta {
  role: OrderRole | 'SYSTEM';
  description: string;
  /**
   * Who the change notifies. The spec's events: a seller's status update tells the buyer ("shipping status
   * changed"); nothing else is emitted, so the buyer's own cancellation tells no one. The expiry sweep (an operator's
   * option, off by default) tells the buyer and the sellers, as neither asked for it.
   */
  notifies: readonly Notified[];
}

/** The buyer's cancellation, the same from PENDING and from CONFIRMED. */
const cancelByBuyer = {
  target: 'CANCELLED',
  guard: 'byBuyer',
  actions: 'recordChangedBy',
  meta: {
    role: 'BUYER',
    description: 'Buyer cancels; stock and salesCount are restored',
    notifies: [],
  } satisfies TransitionMeta,
} as const;

export const orderLifecycleMachine = setup({
  types: {
    context: {} as OrderLifecycleContext,
    events: {} as OrderLifecycleEvent,
  },
  guards: {
    bySeller: ({ event }) => event.role === 'SELLER',
    byBuyer: ({ event }) => event.role === 'BUYER',
    bySystem: ({ event }) => event.role === 'SYSTEM',
  },
  actions: {
    recordChangedBy: assign({ changedBy: ({ event }) => ('memberId' in event ? event.memberId : null) }),
    recordSystem: assign({ changedBy: null }),
  },
}).createMachine({
  id: 'orderLifecycle',
  initial: 'PENDING',
  context: { changedBy: null },
  states: {
    PENDING: {
      description: 'Placed; stock is deducted',
      on: {
        CONFIRM: {
          target: 'CONFIRMED',
          guard: 'bySeller',
          actions: 'recordChangedBy',
          meta: {
            role: 'SELLER',
            description: 'Seller confirms the order',
            notifies: ['BUYER'],
          } satisfies TransitionMeta,
        },
        CANCEL: cancelByBuyer,
        EXPIRE: {
          target: 'CANCELLED',
          guard: 'bySystem',
          actions: 'recordSystem',
          meta: {
            role: 'SYSTEM',
            description:
              'Unconfirmed past ORDER_PENDING_EXPIRY_SECONDS (when set); stock is restored, buyer and sellers notified',
            notifies: ['BUYER', 'SELLERS'],
          } satisfies TransitionMeta,
        },
      },
    },
    CONFIRMED: {
      description: 'Accepted by the seller',
      on: {
        SHIP: {
          target: 'SHIPPED',
          guard: 'bySeller',
          actions: 'recordChangedBy',
          meta: {
            role: 'SELLER',
            description: 'Seller ships the order',
            notifies: ['BUYER'],
          } satisfies TransitionMeta,
        },
        CANCEL: cancelByBuyer,
      },
    },
    SHIPPED: {
      description: 'On its way; no longer cancellable',
      on: {
        DELIVER: {
          target: 'DELIVERED',
          guard: 'bySeller',
          actions: 'recordChangedBy',
          meta: {
            role: 'SELLER',
            description: 'Seller marks the order delivered',
            notifies: ['BUYER'],
          } satisfies TransitionMeta,
        },
      },
    },
    DELIVERED: { type: 'final', description: 'Delivered' },
    CANCELLED: { type: 'final', description: 'Cancelled by the buyer, or expired unconfirmed' },
  },
});

export type OrderStatus = Extract<StateValueFrom<typeof orderLifecycleMachine>, string>;

const walk = walkMachine<TransitionMeta>(orderLifecycleMachine);

/** Every order status, in the order the machine defines them. */
export const ORDER_STATUSES: readonly OrderStatus[] = walk.states.map((state) => state.name as OrderStatus);

type SellerEvent = Extract<OrderLifecycleEvent['type'], 'CONFIRM' | 'SHIP' | 'DELIVER'>;

/** The seller event that moves an order INTO `target` (one step forward), if there is one. */
export const SELLER_EVENT_FOR_TARGET: Partial<Record<OrderStatus, SellerEvent>> = Object.fromEntries(
  walk.transitions
    .filter((transition) => transition.meta?.role === 'SELLER')
    .map((transition) => [transition.to, transition.event]),
);

const NOTIFIED = new Map(
  walk.transitions.map((transition) => [
    `${transition.from} ${transition.event}`,
    transition.meta?.notifies ?? [],
  ]),
);

/** Who the transition taken by `event` from `from` notifies (its meta's `notifies`). */
export function notifiedOn(from: OrderStatus, event: OrderLifecycleEvent['type']): readonly Notified[] {
  return NOTIFIED.get(`${from} ${event}`) ?? [];
}

/** A machine snapshot for an order whose persisted status is `status`. */
export function snapshotFor(status: OrderStatus, changedBy: number | null = null) {
  return orderLifecycleMachine.resolveState({ value: status, context: { changedBy } });
}

/**
 * Decides an event against the persisted status with the pure transition API: the next status, or
 * null when the machine does not allow it (wrong state or wrong role).
 */
export function nextStatus(current: OrderStatus, event: OrderLifecycleEvent): OrderStatus | null {
  const before = snapshotFor(current);
  if (!before.can(event)) return null;
  const [after] = transition(orderLifecycleMachine, before, event);
  return after.value as OrderStatus;
}
