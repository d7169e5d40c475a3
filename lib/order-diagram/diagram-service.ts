// Serves the order-lifecycle diagram: the public page (rendered once, the machine never changes at run time)
// and one order's diagram with its current status and the path it took highlighted.
import type { AnyStateMachine } from 'xstate';
import { renderDiagram } from './diagram-svg';
import { diagramModel } from './diagram-model';
import { diagramPageHtml } from './diagram-page';

/** What an order's diagram needs: the order JSON of the orders service has these fields. */
export interface OrderDiagramSource {
  orderNumber: string;
  status: string;
  /** Oldest first; the first entry is the creation (`from: null`, `to: 'PENDING'`). */
  statusHistory: Array<{ from: string | null; to: string; changedBy: number | null }>;
}

export function createOrderDiagramService(machine?: AnyStateMachine) {
  const model = diagramModel(machine);
  let page: Promise<string> | null = null;

  return {
    model,
    /** HTML of GET /docs/order-lifecycle. */
    diagramPage(): Promise<string> {
      page ??= renderDiagram(model)
        .then((svg) => diagramPageHtml(model, svg))
        .catch((err: unknown) => {
          page = null; // let the next request try again
          throw err;
        });
      return page;
    },

    /** SVG of one order's lifecycle: its current status and the transitions it took, highlighted. */
    orderDiagram(order: OrderDiagramSource): Promise<string> {
      const steps = order.statusHistory.map((change) => ({
        from: change.from,
        to: change.to,
        // The creation has no member either, but no transition of the machine leads to the initial state.
        bySystem: change.from !== null && change.changedBy === null,
      }));
      return renderDiagram(model, {
        current: order.status,
        steps,
        title: `Order ${order.orderNumber}: ${order.status}`,
      });
    },
  };
}

export type OrderDiagramService = ReturnType<typeof createOrderDiagramService>;
