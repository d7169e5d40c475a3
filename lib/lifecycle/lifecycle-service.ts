// Serves the order-lifecycle diagram: the public page (rendered once, the machine never changes at run time)
// and one order's diagram with its current status and the path it took highlighted.
import type { AnyStateMachine } from 'xstate';
import { lifecycleDot, renderSvg } from './lifecycle-diagram';
import { lifecycleModel } from './lifecycle-model';
import { lifecyclePageHtml } from './lifecycle-page';

/** What an order's diagram needs: the order JSON of the orders service has these fields. */
export interface OrderLifecycleSource {
  orderNumber: string;
  status: string;
  /** Oldest first; the first entry is the creation (`from: null`, `to: 'PENDING'`). */
  statusHistory: Array<{ from: string | null; to: string }>;
}

export function createLifecycleService(machine?: AnyStateMachine) {
  const model = lifecycleModel(machine);
  let page: Promise<string> | null = null;

  return {
    model,
    /** HTML of GET /docs/order-lifecycle. */
    diagramPage(): Promise<string> {
      page ??= renderSvg(lifecycleDot(model))
        .then((svg) => lifecyclePageHtml(model, svg))
        .catch((err: unknown) => {
          page = null; // let the next request try again
          throw err;
        });
      return page;
    },

    /** SVG of one order's lifecycle: its current status and the transitions it took, highlighted. */
    orderDiagram(order: OrderLifecycleSource): Promise<string> {
      const steps = order.statusHistory.map((change) => ({ from: change.from, to: change.to }));
      return renderSvg(
        lifecycleDot(model, {
          current: order.status,
          steps,
          title: `Order ${order.orderNumber}: ${order.status}`,
        }),
      );
    },
  };
}

export type LifecycleService = ReturnType<typeof createLifecycleService>;
