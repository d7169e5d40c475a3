// Reads an XState v5 machine's plain definition (`JSON.parse(JSON.stringify(machine))`: guards and actions appear
// by name, transition `meta` as written) into states and transitions. The visualizer, the served diagram and the
// tests all draw from this walk of the real order machine, never from a copy of it.
import type { AnyStateMachine } from 'xstate';
import { orderLifecycleMachine } from '../../actors/order-lifecycle-machine';

export interface LifecycleState {
  name: string;
  description: string;
  final: boolean;
}

export interface LifecycleTransition {
  from: string;
  to: string;
  event: string;
  guard: string | null;
  /** The role that triggers it, from the transition's `meta.role`. */
  role: string | null;
  description: string;
}

export interface LifecycleModel {
  id: string;
  initial: string;
  states: LifecycleState[];
  transitions: LifecycleTransition[];
}

interface PlainTransition {
  target?: string[];
  guard?: string | { type?: string } | null;
  meta?: { role?: string; description?: string };
  eventType: string;
}

interface PlainStateNode {
  id: string;
  key: string;
  type: string;
  description?: string;
  initial?: { target?: string[] };
  states?: Record<string, PlainStateNode>;
  transitions?: PlainTransition[];
}

function guardName(guard: PlainTransition['guard']): string | null {
  if (!guard) return null;
  return typeof guard === 'string' ? guard : (guard.type ?? null);
}

/** State names relative to the machine: `#orderLifecycle.CONFIRMED` -> `CONFIRMED`. */
function stateName(machineId: string, ref: string): string {
  return ref.replace(/^#/, '').replace(new RegExp(`^${machineId}\\.`), '');
}

export function lifecycleModel(machine: AnyStateMachine = orderLifecycleMachine): LifecycleModel {
  const root = JSON.parse(JSON.stringify(machine)) as PlainStateNode;
  const states: LifecycleState[] = [];
  const transitions: LifecycleTransition[] = [];
  // Nested states are flattened to dotted names; the order machine is flat.
  const walk = (node: PlainStateNode) => {
    for (const child of Object.values(node.states ?? {})) {
      const name = stateName(root.id, child.id);
      if (Object.keys(child.states ?? {}).length === 0) {
        states.push({ name, description: child.description ?? '', final: child.type === 'final' });
      }
      for (const t of child.transitions ?? []) {
        for (const target of t.target ?? []) {
          transitions.push({
            from: name,
            to: stateName(root.id, target),
            event: t.eventType,
            guard: guardName(t.guard),
            role: t.meta?.role ?? null,
            description: t.meta?.description ?? '',
          });
        }
      }
      walk(child);
    }
  };
  walk(root);
  const initialTarget = root.initial?.target?.[0];
  if (!initialTarget) throw new Error(`Machine ${root.id} has no initial state`);
  return { id: root.id, initial: stateName(root.id, initialTarget), states, transitions };
}
