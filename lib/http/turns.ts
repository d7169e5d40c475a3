// Requests admitted in turns of the event loop, at most `perTurn` per turn.
//
// Every request's work up to its first real wait (Koa's middleware, the body, authentication, validation, the
// stock actor's decision) runs in one go once it starts. When many requests arrive together (under load the
// answers of one group commit go out at once, and their buyers' next orders come back together), the loop runs
// all of them before it reads a socket again, so the group commit's next statement waits behind that whole burst:
// its transaction took ~11.6 ms per 64-order batch under load where the same writes take ~3.8 ms alone
// (bench/README.md, orders, 2026-11-25). Admitting a few per turn lets the loop read the database's answers
// between them, so the commit's round trips overlap the burst instead of following it. Requests start in the
// order they arrived; one arriving when the turn still has room starts at once, as without turns.
import type http from 'node:http';

export function inTurns(listener: http.RequestListener, perTurn: number): http.RequestListener {
  if (perTurn <= 0) return listener;
  const waiting: Array<[http.IncomingMessage, http.ServerResponse]> = [];
  let started = 0;
  let turnScheduled = false;

  // The next turn (setImmediate: after the loop has polled its sockets) starts the next few waiting.
  function nextTurn(): void {
    turnScheduled = false;
    const due = waiting.splice(0, perTurn);
    started = due.length;
    // The turn after this one is set first, and a listener that throws does so after the rest of its turn started
    // (as an uncaught exception, as from a plain server's 'request' event): a throw strands no other request.
    if (started > 0) scheduleTurn();
    for (const [req, res] of due) {
      try {
        listener(req, res);
      } catch (err) {
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }
  function scheduleTurn(): void {
    if (turnScheduled) return;
    turnScheduled = true;
    setImmediate(nextTurn);
  }

  return (req, res) => {
    if (started < perTurn && waiting.length === 0) {
      started += 1;
      scheduleTurn();
      listener(req, res);
      return;
    }
    waiting.push([req, res]);
    scheduleTurn();
  };
}
