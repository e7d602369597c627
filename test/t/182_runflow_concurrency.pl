
# Concurrent run_flow calls without the worker, while one of them moves
# flows between the slots (docs/operations.md "Lanes and slots").
#
# 1. A run that moves a paused flow to the laggard slot holds the moves
#    lock to the end of its transaction.  Another run that holds the main
#    slot meanwhile does not wait for that lock to confirm the slot (it
#    skips confirming this time): it used to, and when the first
#    transaction then ran a flow again it waited for the slot, unseen by
#    the deadlock detector, and both hung.  A later run confirms the slot.
# 2. A run in REPEATABLE READ whose snapshot predates another flow's
#    committed state makes no moves (locking that state would fail with a
#    serialization error): it applies its flow; a later run moves.
# Every statement has a statement_timeout, so that a hang fails the test.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('runflow_concurrency');

sub sql
{
	return $node->safe_psql('postgres', $_[0]);
}

sql(q{
	CREATE EXTENSION autocdc;
	CREATE TABLE afeed (id int, seq int, v text);
	CREATE TABLE bfeed (id int, seq int, v text);
	CREATE TABLE cfeed (id int, seq int, v text);
	CREATE TABLE dfeed (id int, seq int, v text);
	SELECT autocdc.create_flow('atgt', 'afeed', '{id}', 'seq', continuous => false);
	SELECT autocdc.create_flow('btgt', 'bfeed', '{id}', 'seq', continuous => false);
	SELECT autocdc.create_flow('ctgt', 'cfeed', '{id}', 'seq', continuous => false);
	SELECT autocdc.create_flow('dtgt', 'dfeed', '{id}', 'seq', continuous => false);
});
sql(qq{SELECT num_events FROM autocdc.run_flow('${_}tgt')}) for qw(a b c d);
sql(q{SELECT autocdc.pause_flow('ctgt')});
is(sql(q{SELECT string_agg(name || ':' || lane, ',' ORDER BY name) FROM autocdc.flows}),
	'atgt:main,btgt:main,ctgt:main,dtgt:main', 'every flow starts on the main slot');

# --- 1. a run holding the main slot does not wait for the moves lock ----
sql(q{INSERT INTO afeed VALUES (1, 1, 'a1'); INSERT INTO bfeed VALUES (1, 1, 'b1')});
my $sa = $node->background_psql('postgres', on_error_stop => 0);
my $sb = $node->background_psql('postgres', on_error_stop => 0);
# the moving run gives up first (the other one then still waits for it)
$sa->query_safe(q{SET statement_timeout = '30s'});
$sb->query_safe(q{SET statement_timeout = '60s'});
$sa->query_safe('BEGIN');
is($sa->query_safe(q{SELECT num_events FROM autocdc.run_flow('atgt')}), '1',
	'a run that moves the paused flow applies its event');
is(sql(q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 73
		AND mode = 'ExclusiveLock' AND granted}),
	'1', 'and holds the moves lock until its transaction ends');

# the other run has written (so it makes no moves itself): it decodes from
# the main slot, which it confirms before and after decoding
my $bpid = $sb->query_safe('SELECT pg_backend_pid()');
$sb->query_safe('BEGIN');
$sb->query_safe('SELECT pg_catalog.txid_current()');
$sb->query_until(qr/started/, q{
	\echo started
	SELECT 'b:' || num_events FROM autocdc.run_flow('btgt');
});
ok( $node->poll_query_until('postgres', qq{
		SELECT state = 'idle in transaction' OR wait_event_type = 'Lock'
		  FROM pg_stat_activity WHERE pid = $bpid}),
	'the other run ends or waits');
is(sql(qq{SELECT state FROM pg_stat_activity WHERE pid = $bpid}),
	'idle in transaction', 'the other run ended without waiting for the moves lock');

# the first transaction runs its flow again: it needs the main slot
sql(q{INSERT INTO afeed VALUES (2, 1, 'a2')});
my $again = $sa->query(q{SELECT num_events FROM autocdc.run_flow('atgt')});
is($again, '1', 'a second run in the moving transaction gets the main slot')
  or diag($sa->{stderr});
$sa->query('COMMIT');
$sb->query('COMMIT');
is(sql(q{SELECT (SELECT string_agg(v, ',' ORDER BY id) FROM atgt) || '/' || (SELECT string_agg(v, ',') FROM btgt)}),
	'a1,a2/b1', 'both runs applied their events');
is(sql(q{SELECT string_agg(name || ':' || lane, ',' ORDER BY name) FROM autocdc.flows}),
	'atgt:main,btgt:main,ctgt:laggard,dtgt:main',
	'the paused flow is on the laggard slot');

# a later run confirms the main slot up to the oldest progress of its flows
my $oldest = sql(q{SELECT min(progress) FROM autocdc.flow_state
	WHERE slot_name = (SELECT slot_name FROM autocdc_internal._slots() WHERE NOT laggard)});
sql(q{SELECT num_events FROM autocdc.run_flow('btgt')});
is(sql(qq{SELECT confirmed_flush_lsn >= '$oldest' FROM pg_replication_slots s
	JOIN autocdc_internal._slots() l USING (slot_name) WHERE NOT l.laggard}),
	't', 'a later run confirms the main slot');

# --- 2. no moves in REPEATABLE READ -------------------------------------
sql(q{SELECT autocdc.pause_flow('dtgt')});
sql(q{INSERT INTO afeed VALUES (3, 1, 'a3'); INSERT INTO dfeed VALUES (1, 1, 'd1')});
my $sr = $node->background_psql('postgres', on_error_stop => 0);
$sr->query_safe(q{SET statement_timeout = '30s'});
$sr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$sr->query_safe('SELECT count(*) FROM atgt');	# takes the snapshot
# the paused flow is run by hand meanwhile (in a transaction that has
# written, so that this run moves nothing either)
sql(q{BEGIN; SELECT pg_catalog.txid_current(); SELECT num_events FROM autocdc.run_flow('dtgt'); COMMIT;});
my $rr = $sr->query(q{SELECT num_events FROM autocdc.run_flow('atgt')});
is($rr, '1', 'a REPEATABLE READ run applies its flow although a flow due to move changed since its snapshot')
  or diag($sr->{stderr});
$sr->query('COMMIT');
is(sql(q{SELECT lane FROM autocdc.flows WHERE name = 'dtgt'}), 'main',
	'it moved nothing');
sql(q{INSERT INTO afeed VALUES (4, 1, 'a4')});
sql(q{SELECT num_events FROM autocdc.run_flow('atgt')});
is(sql(q{SELECT lane FROM autocdc.flows WHERE name = 'dtgt'}), 'laggard',
	'the next run in READ COMMITTED moves the paused flow');
is(sql(q{SELECT count(*) FROM atgt}), '4', 'every event of the flow is applied once');

$_->quit for ($sa, $sb, $sr);
$node->stop;
done_testing();
