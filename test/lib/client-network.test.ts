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
  t.is(clientNetwork('::'), '0:0:0:0::/64');
  t.is(clientNetwork('64:ff9b:1::192.0.2.7'), '64:ff9b:1:0::/64', 'not the well-known NAT64 /96');
  t.is(clientNetwork('1::'), '1:0:0:0::/64');
  t.is(clientNetwork('2001:db8::'), '2001:db8:0:0::/64');
});

test('IPv4 counts as itself, also written inside IPv6 (mapped, translated, compatible, NAT64) or with a port; anything else is kept', (t) => {
  t.is(clientNetwork('192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::ffff:192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::FFFF:192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::ffff:c000:207'), '192.0.2.7');
  t.is(clientNetwork('0:0:0:0:0:ffff:192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::ffff:0:192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('::192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('64:ff9b::192.0.2.7'), '192.0.2.7');
  t.is(clientNetwork('64:ff9b::c000:208'), '192.0.2.8');
  t.is(clientNetwork('192.0.2.7:51234'), '192.0.2.7');
  t.is(clientNetwork('[::ffff:192.0.2.7]:443'), '192.0.2.7');
  t.is(clientNetwork('[2001:db8:aa:1::5]:443'), '2001:db8:aa:1::/64');
  t.is(clientNetwork('[2001:db8:aa:1::5]'), '2001:db8:aa:1::/64');
  t.not(clientNetwork('192.0.2.7'), clientNetwork('192.0.2.8'));
  t.is(clientNetwork(''), '');
  t.is(clientNetwork('unknown'), 'unknown');
});
