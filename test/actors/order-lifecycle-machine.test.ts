import test from 'ava';
import { createActor } from 'xstate';
import {
  ORDER_STATUSES,
  nextStatus,
  notifiedOn,
  orderLifecycleMachine,
  snapshotFor,
  type OrderLifecycleEvent,
  type OrderStatus,
  type TransitionMeta,
} from '../../actors/order-lifecycle-machine';
import { walkMachine } from '../../actors/machine-walk';

const seller = { memberId: 7, role: 'SELLER' as const };
const buyer = { memberId: 9, role: 'BUYER' as const };

test('the seller moves an order exactly one step forward', (t) => {
  t.is(nextStatus('PENDING', { type: 'CONFIRM', ...seller }), 'CONFIRMED');
  t.is(nextStatus('CONFIRMED', { type: 'SHIP', ...seller }), 'SHIPPED');
  t.is(nextStatus('SHIPPED', { type: 'DELIVER', ...seller }), 'DELIVERED');
  // skipping or going back is not a transition
  t.is(nextStatus('PENDING', { type: 'SHIP', ...seller }), null);
  t.is(nextStatus('PENDING', { type: 'DELIVER', ...seller }), null);
  t.is(nextStatus('SHIPPED', { type: 'CONFIRM', ...seller }), null);
  t.is(nextStatus('DELIVERED', { type: 'DELIVER', ...seller }), null);
});

test('the buyer cancels from PENDING or CONFIRMED only', (t) => {
  t.is(nextStatus('PENDING', { type: 'CANCEL', ...buyer }), 'CANCELLED');
  t.is(nextStatus('CONFIRMED', { type: 'CANCEL', ...buyer }), 'CANCELLED');
  for (const from of ['SHIPPED', 'DELIVERED', 'CANCELLED'] as OrderStatus[]) {
    t.is(nextStatus(from, { type: 'CANCEL', ...buyer }), null, from);
  }
});

test('the guards enforce the role named in each transition meta', (t) => {
  t.is(nextStatus('PENDING', { type: 'CONFIRM', ...buyer }), null);
  t.is(nextStatus('PENDING', { type: 'CANCEL', ...seller }), null);
  t.is(nextStatus('CONFIRMED', { type: 'SHIP', memberId: 1, role: 'ADMIN' }), null);
  const table = walkMachine<TransitionMeta>(orderLifecycleMachine).transitions;
  t.deepEqual(
    table.map((row) => `${row.from} -${row.event}/${row.meta?.role}:${row.guard}-> ${row.to}`).sort(),
    [
      'CONFIRMED -CANCEL/BUYER:byBuyer-> CANCELLED',
      'CONFIRMED -SHIP/SELLER:bySeller-> SHIPPED',
      'PENDING -CANCEL/BUYER:byBuyer-> CANCELLED',
      'PENDING -CONFIRM/SELLER:bySeller-> CONFIRMED',
      'PENDING -EXPIRE/SYSTEM:bySystem-> CANCELLED',
      'SHIPPED -DELIVER/SELLER:bySeller-> DELIVERED',
    ],
  );
});

test('the system expires a PENDING order only (never a CONFIRMED one); no member can send EXPIRE', (t) => {
  const expire = { type: 'EXPIRE', role: 'SYSTEM' } as const;
  t.is(nextStatus('PENDING', expire), 'CANCELLED');
  for (const from of ['CONFIRMED', 'SHIPPED', 'DELIVERED', 'CANCELLED'] as OrderStatus[]) {
    t.is(nextStatus(from, expire), null, from);
  }
  for (const member of [buyer, seller, { memberId: 1, role: 'ADMIN' as const }]) {
    t.is(nextStatus('PENDING', { ...member, type: 'EXPIRE' } as unknown as OrderLifecycleEvent), null);
  }
  // The system's change records no member as its author.
  const actor = createActor(orderLifecycleMachine, { snapshot: snapshotFor('PENDING', buyer.memberId) });
  actor.subscribe({ error: (err) => t.fail(String(err)) });
  actor.start();
  actor.send(expire);
  t.is(actor.getSnapshot().value, 'CANCELLED');
  t.is(actor.getSnapshot().context.changedBy, null);
  actor.stop();
});

test('DELIVERED and CANCELLED are final; every status is a state', (t) => {
  t.deepEqual(Object.keys(orderLifecycleMachine.states).sort(), [...ORDER_STATUSES].sort());
  t.is(snapshotFor('DELIVERED').status, 'done');
  t.is(snapshotFor('CANCELLED').status, 'done');
  t.is(snapshotFor('SHIPPED').status, 'active');
});

test('an actor restored from a persisted status continues from it and records who changed it', (t) => {
  const actor = createActor(orderLifecycleMachine, { snapshot: snapshotFor('CONFIRMED') });
  actor.subscribe({ error: (err) => t.fail(String(err)) });
  actor.start();
  const event: OrderLifecycleEvent = { type: 'SHIP', ...seller };
  actor.send(event);
  t.is(actor.getSnapshot().value, 'SHIPPED');
  t.is(actor.getSnapshot().context.changedBy, seller.memberId);
  actor.send({ type: 'CANCEL', ...buyer }); // ignored: not a transition from SHIPPED
  t.is(actor.getSnapshot().value, 'SHIPPED');
  actor.stop();
});

test('the definition serialises to plain data with guards by name (what the visualizer reads)', (t) => {
  const json = JSON.parse(JSON.stringify(orderLifecycleMachine.definition ?? orderLifecycleMachine));
  const text = JSON.stringify(json);
  t.true(text.includes('bySeller'));
  t.true(text.includes('"role":"BUYER"'));
});

test("who each transition notifies: the buyer of a seller's step, no one of the buyer's cancel, everyone of an expiry", (t) => {
  t.deepEqual(notifiedOn('PENDING', 'CONFIRM'), ['BUYER']);
  t.deepEqual(notifiedOn('CONFIRMED', 'SHIP'), ['BUYER']);
  t.deepEqual(notifiedOn('SHIPPED', 'DELIVER'), ['BUYER']);
  t.deepEqual(notifiedOn('PENDING', 'CANCEL'), []);
  t.deepEqual(notifiedOn('CONFIRMED', 'CANCEL'), []);
  t.deepEqual(notifiedOn('PENDING', 'EXPIRE'), ['BUYER', 'SELLERS']);
  // No such transition: no one.
  t.deepEqual(notifiedOn('SHIPPED', 'CANCEL'), []);
});
