
# Concurrent runs (semantics §2, §3): runs of different flows queue for the one
# slot and never fail because it is busy; two runs of one flow never apply it
# at once (the second waits for the first and then applies only what is
# left); a REPEATABLE READ transaction whose snapshot predates the flow's
# last committed run fails with serialization_failure; a slot still being
# created is not taken for ready; a failed run found by two runs is written
# down once.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('concurrency');


# autocdc in a database, with a flow feed_<x> -> tgt_<x> for each name given
sub setup_flows
{
	my ($db, @names) = @_;
	$node->safe_psql($db, 'CREATE EXTENSION autocdc;'
		  . join('', map { qq{
			CREATE TABLE feed_$_ (k int, v text, seq int);
			SELECT autocdc.create_flow('tgt_$_', 'feed_$_', '{k}', 'seq', continuous => false);}
		  } @names));
}

setup_flows('postgres', 'a', 'b');
$node->safe_psql('postgres', "SELECT * FROM autocdc.run_flow('tgt_a')");
$node->safe_psql('postgres', "SELECT * FROM autocdc.run_flow('tgt_b')");

# --- runs of different flows queue for the slot -------------------------
# Many inserts make each run decode for a while; both runs start together.
$node->safe_psql('postgres', q{
	INSERT INTO feed_a SELECT i % 5000, 'a' || i, i FROM generate_series(1, 100000) i;
	INSERT INTO feed_b SELECT i % 5000, 'b' || i, i FROM generate_series(1, 100000) i;
});
my $s1 = $node->background_psql('postgres', on_error_stop => 0);
my $s2 = $node->background_psql('postgres');
$s1->query_until(qr/started/, q{
	\echo started
	SELECT num_events FROM autocdc.run_flow('tgt_a') \g /dev/null
});
my $out_b = $s2->query("SELECT num_events FROM autocdc.run_flow('tgt_b')");
is($out_b, '100000', 'a run of another flow waits for the busy slot instead of failing');
$s1->query("SELECT 1");
is($node->safe_psql('postgres', "SELECT num_events FROM autocdc.flows WHERE name = 'tgt_a'"),
	'100000', 'the first run applied everything too');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tgt_a}), '5000', 'target a is complete');
is($node->safe_psql('postgres', q{SELECT count(*) FROM tgt_b}), '5000', 'target b is complete');

# --- two runs of one flow: never at once, same result as one applier ----
$node->safe_psql('postgres', q{INSERT INTO feed_a VALUES (1, 'late', 1000000)});
$s1->query_safe("BEGIN");
is($s1->query_safe("SELECT num_events FROM autocdc.run_flow('tgt_a')"), '1',
	'first applier takes the new event and keeps the flow locked');
is($node->safe_psql('postgres',
		"SELECT state FROM autocdc.flows WHERE name = 'tgt_a'"),
	'running', 'the flow shows running while its run is not committed');
start_blocked_run($node, $s2, 'postgres', 'tgt_a', 'second:', 'wait_event_type', 'Lock',
	'the second run waits for the first');
$s1->query_safe("COMMIT");
my $second = $s2->query('SELECT 1');
is($node->safe_psql('postgres',
		"SELECT num_events FROM autocdc.flow_runs WHERE flow = 'tgt_a' ORDER BY id DESC LIMIT 1"),
	'0', 'the second run applies nothing the first already applied');
is($node->safe_psql('postgres', q{SELECT v FROM tgt_a WHERE k = 1}), 'late',
	'the result is that of a single applier');

# --- REPEATABLE READ with a snapshot older than the last run ------------
$s1->query_safe("BEGIN ISOLATION LEVEL REPEATABLE READ");
$s1->query_safe("SELECT count(*) FROM tgt_b");	# takes the snapshot
$node->safe_psql('postgres', q{INSERT INTO feed_b VALUES (2, 'newer', 2000000)});
$node->safe_psql('postgres', "SELECT * FROM autocdc.run_flow('tgt_b')");
$s1->query("SELECT * FROM autocdc.run_flow('tgt_b')");
like($s1->{stderr}, qr/could not serialize access/,
	'a REPEATABLE READ run whose snapshot predates the last run fails with serialization_failure');
$s1->query("ROLLBACK");
is($node->safe_psql('postgres', q{SELECT v FROM tgt_b WHERE k = 2}), 'newer',
	'the committed run is intact');

# --- a slot still being created is not ready ----------------------------
# Creating the database's slot waits for the transactions running then.  A
# run that took the half-made slot for ready, got an xid and waited to
# acquire it would never end, unseen by the deadlock detector (the worker
# once did).  Now a run with writes of its own fails at once with a hint,
# and one without waits for the creator's lock.
$node->safe_psql('postgres', 'CREATE DATABASE slotdb');
setup_flows('slotdb', 'c1', 'c2');
my $h = $node->background_psql('slotdb');
$h->query_safe("BEGIN");
$h->query_safe("INSERT INTO feed_c1 VALUES (1, 'open', 1)");
my $creator = $node->background_psql('slotdb');
start_blocked_run($node, $creator, 'slotdb', 'tgt_c1', 'creator:', 'wait_event', 'transactionid',
	'the run creating the slot waits for a running transaction');
my ($ret, $stdout, $stderr) = $node->psql('slotdb', q{
	BEGIN;
	INSERT INTO feed_c2 VALUES (1, 'x', 1);
	SELECT num_events FROM autocdc.run_flow('tgt_c2');
	COMMIT;
}, timeout => 60);
like($stderr, qr/replication slot of autocdc does not exist yet/,
	'a run that wrote before fails at once instead of waiting for the half-made slot');
my $waiter = $node->background_psql('slotdb');
start_blocked_run($node, $waiter, 'slotdb', 'tgt_c2', 'waiter:', 'wait_event_type', 'Lock',
	'a run without writes waits for the creator');
$h->query_safe("COMMIT");
like($waiter->query('SELECT 1'), qr/waiter:0/, 'and then runs');
$creator->query('SELECT 1');
is($node->safe_psql('slotdb', "SELECT count(*) FROM pg_replication_slots WHERE database = 'slotdb'"),
	'1', 'one slot');
$h->quit;
$creator->quit;
$waiter->quit;

# --- two flows created at once cannot close a cycle between them --------
# The second create_flow waits for the first to commit, then sees its flow
# and refuses.
$node->safe_psql('postgres', q{
	CREATE TABLE cy_a (id int PRIMARY KEY, v text);
	CREATE TABLE cy_b (id int PRIMARY KEY, v text);
});
my $c1 = $node->background_psql('postgres');
my $c2 = $node->background_psql('postgres', on_error_stop => 0);
$c1->query_safe("BEGIN");
$c1->query_safe(q{SELECT autocdc.create_flow(target => 'cy_b', source => 'changes(cy_a)', keys => '{id}', continuous => false)});
$c2->query_safe("BEGIN");
$c2->query_until(qr/started/, q{
	\echo started
	SELECT autocdc.create_flow(target => 'cy_a', source => 'changes(cy_b)', keys => '{id}', continuous => false);
});
ok($node->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM pg_stat_activity
		 WHERE wait_event_type = 'Lock' AND query LIKE '%changes(cy_b)%'}),
	'a second create_flow waits for one being created');
$c1->query_safe("COMMIT");
$c2->query("SELECT 1");
like($c2->{stderr}, qr/would close a cycle of flows/, 'and then refuses to close the cycle');
$c2->query("ROLLBACK");
is($node->safe_psql('postgres', q{SELECT string_agg(name, ',' ORDER BY name) FROM autocdc.flow WHERE name LIKE 'cy_%'}),
	'cy_b', 'only the first flow exists');

# --- a failed run is written down once ------------------------------------
# A failed run's error waits in shared memory until the next run of a flow
# of the database writes it down.  Two runs that both find it: the one that
# waits for the other's lock on the flow's state must not write it again
# (one flow_runs row, one retry counted).
# (a run writes down the failures earlier tests left)
$node->safe_psql('postgres', "SELECT * FROM autocdc.run_flow('tgt_a')");
my $before = $node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM autocdc.flow_run_log WHERE flow = 'tgt_b' AND status = 'error')
		   || ' ' || (SELECT retries FROM autocdc.flow_state WHERE name = 'tgt_b')});
my ($errors0, $retries0) = split / /, $before;
$node->safe_psql('postgres', q{INSERT INTO feed_b VALUES (9, 'no sequence', NULL)});
$node->psql('postgres', "SELECT * FROM autocdc.run_flow('tgt_b')");
is($node->safe_psql('postgres', q{SELECT count(*) FROM autocdc_internal._pending_errors()}),
	'1', 'the failure waits in shared memory');
# (a snapshot flow's run takes no slot lock before it writes failures down)
$node->safe_psql('postgres', q{
	CREATE TABLE snap_src (k int, v text);
	SELECT autocdc.create_snapshot_flow('snap_t', 'snap_src', '{k}', continuous => false);
});
$c1->query_safe("BEGIN");
$c1->query_safe("SELECT num_events FROM autocdc.run_flow('tgt_a')");
start_blocked_run($node, $c2, 'postgres', 'snap_t', 'again:', 'wait_event_type', 'Lock',
	'a run that finds the same failure waits for the run writing it down');
$c1->query_safe("COMMIT");
$c2->query("SELECT 1");
is($node->safe_psql('postgres', q{
		SELECT count(*) || ' ' || count(DISTINCT started_at) FROM autocdc.flow_run_log
		 WHERE flow = 'tgt_b' AND status = 'error'}),
	($errors0 + 1) . ' ' . ($errors0 + 1), 'the failure has one row in the run log');
is($node->safe_psql('postgres', q{SELECT retries FROM autocdc.flow_state WHERE name = 'tgt_b'}),
	$retries0 + 1, 'and counts one retry');

$c1->quit;
$c2->quit;
$s1->quit;
$s2->quit;
$node->stop;
done_testing();
