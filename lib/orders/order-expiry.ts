// Expiry of unconfirmed orders (ORDER_PENDING_EXPIRY_SECONDS, off unless set): every
// ORDER_EXPIRY_SWEEP_SECONDS a sweep cancels at most ORDER_EXPIRY_BATCH PENDING orders older than that,
// through the order machine (EXPIRE, by the system), restoring their stock and notifying buyer and sellers
// (OrderService.expirePending). Any number of instances may sweep one database: the compare-and-set decides.
// An order that fails is logged and left to the next sweep; the others of the sweep still expire.
import type { OrderPolicies } from '../config';
import type { Logger } from '../logger';
import { createPeriodic } from '../maintenance/periodic';
import type { OrderService } from './order-service';

export function createOrderExpiry(deps: {
  logger: Logger;
  orders: Pick<OrderService, 'expirePending'>;
  expiry: NonNullable<OrderPolicies['pendingExpiry']>;
  /** The first sweep after start: at a random moment within this many seconds (null: one interval). */
  firstPassWithinSeconds: number | null;
}) {
  const { expiry } = deps;
  const log = deps.logger.child({ component: 'OrderExpiry' });

  /**
   * One sweep as of `now` (the tests pass a later clock instead of waiting); the expired order ids. Once
   * `signal` is aborted (stop()) the sweep ends after the order under way; the next sweep takes the rest.
   */
  async function sweepOnce(now = new Date(), signal?: AbortSignal): Promise<number[]> {
    const { expired, failed } = await deps.orders.expirePending(now, expiry.seconds, expiry.batch, signal);
    for (const { orderId, err } of failed) {
      log.error(
        { err, orderId },
        expired.includes(orderId)
          ? `Order ${orderId} expired, but announcing its restored stock failed`
          : `Expiring order ${orderId} failed; the next sweep tries it again`,
      );
    }
    if (expired.length > 0) {
      log.info(
        { expired: expired.length, orderIds: expired },
        `Expired ${expired.length} order(s) left PENDING for over ${expiry.seconds} s`,
      );
    }
    return expired;
  }

  const schedule = createPeriodic({
    intervalSeconds: expiry.sweepSeconds,
    firstPassWithinSeconds: deps.firstPassWithinSeconds,
    run: (signal) => sweepOnce(new Date(), signal),
    log,
    failure: 'Expiring pending orders failed; trying again at the next sweep',
  });
  return { sweepOnce, start: schedule.start, stop: schedule.stop };
}

export type OrderExpiry = ReturnType<typeof createOrderExpiry>;
