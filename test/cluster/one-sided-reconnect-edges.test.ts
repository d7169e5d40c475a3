// The other half of a one-sided NATS blip (one-sided-reconnect.test.ts pins the first): while only A is cut off,
// B's edit is announced on NATS and A misses it. A's reconnect must drop A's own caches too, not only tell the
// others to drop theirs: nobody else knows A missed something, and A's detail cache would otherwise serve the
// old price for its whole TTL (minutes).
import test from 'ava';
import { editDuringOneSidedCut, natsTest, startProxiedPair, type ProxiedPair } from './cluster-fixtures';

let pair: ProxiedPair | undefined;
test.after.always(() => pair?.close());

natsTest(
  'an instance that lost only its own NATS link drops its own caches on reconnecting: it serves the edit it missed',
  async (t) => {
    pair = await startProxiedPair('one-sided-edges');
    await editDuringOneSidedCut(t, pair, 'b');
  },
);
