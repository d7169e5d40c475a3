// Serves the order-lifecycle diagram: the public page (rendered once, the machine never changes at run time)
// and one order's diagram with its current status and the path it took highlighted.
import type { AnyStateMachine } from 'xstate';
import { lifecycleDot, renderSvg } from './lifecycle-diagram';
import { lifecycleModel } from './lifecycle-model';
import { lifecyclePageHtml } from './lifecycle-page';

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
  };
}

export type LifecycleService = ReturnType<typeof createLifecycleService>;
