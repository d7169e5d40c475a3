// Serves the order-lifecycle diagram: the public page (rendered once, the machine never changes at run time)
// and one order's diagram with its current status and the path it took highlighted. A drawing costs ~3 ms of the
// event loop (Graphviz in WebAssembly), so an order's diagram is drawn once per path through the machine, with a
// stand-in for its order number in the title, and each order's number is written into a copy. Order numbers all
// have one length and the title is narrower than the drawing, so the layout is the one the number itself gives
// (test/docs/lifecycle-diagram.test.ts compares the two byte for byte).
import type { AnyStateMachine } from 'xstate';
import { renderDiagram } from './diagram-svg';
import type { DiagramHighlight } from './diagram-dot';
import { diagramModel } from './diagram-model';
import { diagramPageHtml } from './diagram-page';

/** What an order's diagram needs: the order JSON of the orders service has these fields. */
export interface OrderDiagramSource {
  orderNumber: string;
  status: string;
  /** Oldest first; the first entry is the creation (`from: null`, `to: 'PENDING'`). */
  statusHistory: Array<{ from: string | null; to: string; changedBy: number | null }>;
}

/** An order number as order-number.ts makes them: the UTC date, a dash and 12 Crockford base32 characters. */
const ORDER_NUMBER = /^\d{8}-[0-9A-HJKMNP-TV-Z]{12}$/;
/** Drawn in an order number's place; as Graphviz writes it in the SVG (a dash is `&#45;` there). */
const STAND_IN = '00000000-000000000000';
const svgText = (orderNumber: string) => orderNumber.replace('-', '&#45;');
/** The paths through the machine are few; this bounds the drawings kept should a history hold anything else. */
export const MAX_DRAWN_PATHS = 64;

export function createOrderDiagramService(
  options: { machine?: AnyStateMachine; render?: typeof renderDiagram } = {},
) {
  const model = diagramModel(options.machine);
  const render = options.render ?? renderDiagram;
  let page: Promise<string> | null = null;
  /** Drawings by path (current status and steps), with the stand-in's number. */
  const drawn = new Map<string, Promise<string>>();

  function drawOnce(highlight: DiagramHighlight): Promise<string> {
    const path = JSON.stringify([highlight.current, highlight.steps]);
    let drawing = drawn.get(path);
    if (!drawing) {
      drawing = render(model, highlight);
      if (drawn.size >= MAX_DRAWN_PATHS) return drawing;
      drawn.set(path, drawing);
      drawing.catch(() => drawn.delete(path)); // the next request draws it again
    }
    return drawing;
  }

  return {
    model,
    /** HTML of GET /docs/order-lifecycle. */
    diagramPage(): Promise<string> {
      page ??= render(model)
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
      const title = (orderNumber: string) => `Order ${orderNumber}: ${order.status}`;
      if (!ORDER_NUMBER.test(order.orderNumber))
        return render(model, { current: order.status, steps, title: title(order.orderNumber) });
      return drawOnce({ current: order.status, steps, title: title(STAND_IN) }).then((svg) =>
        svg.replace(svgText(STAND_IN), svgText(order.orderNumber)),
      );
    },
  };
}

export type OrderDiagramService = ReturnType<typeof createOrderDiagramService>;
