// The network a client address is rate-limited as (lib/limits/rate-limits.ts clientNetwork): an IPv6 address by
// its /64 whatever way it is written, an IPv4 address (also IPv4-mapped) as itself.
import test from 'ava';
import { clientNetwork } from '../../lib/limits/rate-limits';

test('IPv6 addresses of one /64 are one network, however they are written', (t) => {
  const network = '2001:db8:aa:1::/64';
  for (const address of [
    '2001:db8:aa:1::1',
    '2001:db8:aa:1:ffff:ffff:ffff:ffff',
    '2001:0DB8:00AA:0001:0:0:0:7',
    '2001:db8:aa:1:0:0:192.0.2.1',
    '2001:db8:aa:1::9%eth0',
  ]) {
    t.is(clientNetwork(address), network, address);
  }
  t.is(clientNetwork('2001:db8:aa:2::1'), '2001:db8:aa:2::/64');
  t.is(clientNetwork('::1'), '0:0:0:0::/64');
  t.is(clientNetwork('1::'), '1:0:0:0::/64');
  t.is(clientNetwork('2001:db8::'), '2001:db8:0:0::/64');
});

test('IPv4 counts as itself, also written IPv4-mapped; anything else is kept as it is', (t) => {
  t.is(clientNetwork('192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::ffff:192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::FFFF:192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::ffff:c000:207'), '192.0.2.7');
  t.is(clientNetwork('0:0:0:0:0:ffff:192.0.2.7'), '192.0.2.7');
  t.not(clientNetwork('192.0.2.7'), clientNetwork('192.0.2.8'));
  t.is(clientNetwork(''), '');
  t.is(clientNetwork('unknown'), 'unknown');
});
