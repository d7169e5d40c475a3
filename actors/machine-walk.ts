// The one walker of a machine's definition: its states (with description and finality) and every
// transition (event, target, guard name, meta), read through XState's state-node API. The order service
// derives its status list and seller events from it, the diagram (lib/order-diagram) draws it, and the
// tests check it; nobody keeps a copy of the machine.
import type { AnyStateMachine } from 'xstate';

export interface WalkedState {
  /** Dotted path from the root (`A.B` for a nested state; the order machine is flat). */
  name: string;
  description: string;
  final: boolean;
}

export interface WalkedTransition<TMeta = unknown> {
  from: string;
  event: string;
  to: string;
  /** The guard's name, or null when the transition is unguarded. */
  guard: string | null;
  meta: TMeta | undefined;
}

export interface MachineWalk<TMeta = unknown> {
  id: string;
  initial: string;
  /** Leaf states in definition order. */
  states: WalkedState[];
  transitions: Array<WalkedTransition<TMeta>>;
}

type StateNode = AnyStateMachine['root'];

function guardName(guard: unknown): string | null {
  if (!guard) return null;
  if (typeof guard === 'string') return guard;
  return (guard as { type?: string }).type ?? null;
}

export function walkMachine<TMeta = unknown>(machine: AnyStateMachine): MachineWalk<TMeta> {
  const rootPath = (node: StateNode) => node.path.join('.');
  const states: WalkedState[] = [];
  const transitions: Array<WalkedTransition<TMeta>> = [];
  const visit = (node: StateNode) => {
    for (const child of Object.values(node.states) as StateNode[]) {
      const name = rootPath(child);
      if (Object.keys(child.states).length === 0) {
        states.push({ name, description: child.description ?? '', final: child.type === 'final' });
      }
      for (const [event, definitions] of child.transitions) {
        for (const definition of definitions) {
          for (const target of definition.target ?? []) {
            transitions.push({
              from: name,
              event,
              to: rootPath(target as StateNode),
              guard: guardName(definition.guard),
              meta: definition.meta as TMeta | undefined,
            });
          }
        }
      }
      visit(child);
    }
  };
  visit(machine.root);
  const initial = machine.root.initial?.target?.[0];
  if (!initial) throw new Error(`Machine ${machine.id} has no initial state`);
  return { id: machine.id, initial: rootPath(initial as StateNode), states, transitions };
}
