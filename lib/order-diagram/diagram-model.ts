// What the order diagram draws: the states and transitions of a machine (the order machine by default),
// from the one walker of its definition (actors/machine-walk.ts), with each transition's role and
// description from its `meta`. The visualizer script, the served pages and the tests all draw from it.
import type { AnyStateMachine } from 'xstate';
import { walkMachine, type WalkedState } from '../../actors/machine-walk';
import { orderLifecycleMachine } from '../../actors/order-lifecycle-machine';

export type DiagramState = WalkedState;

export interface DiagramTransition {
  from: string;
  to: string;
  event: string;
  guard: string | null;
  /** The role that triggers it, from the transition's `meta.role`. */
  role: string | null;
  description: string;
}

export interface DiagramModel {
  id: string;
  initial: string;
  states: DiagramState[];
  transitions: DiagramTransition[];
}

export function diagramModel(machine: AnyStateMachine = orderLifecycleMachine): DiagramModel {
  const walk = walkMachine<{ role?: string; description?: string }>(machine);
  return {
    id: walk.id,
    initial: walk.initial,
    states: walk.states,
    transitions: walk.transitions.map((transition) => ({
      from: transition.from,
      to: transition.to,
      event: transition.event,
      guard: transition.guard,
      role: transition.meta?.role ?? null,
      description: transition.meta?.description ?? '',
    })),
  };
}
