
# Citus (docs/operations.md "Citus and partitioned targets"): a coordinator and two
# workers on localhost, autocdc preloaded on each.  A run addresses the rows
# it changes by their row id, which Citus' shards each number on their own,
# so autocdc refuses to write a Citus table: a target distributed after
# create_flow is refused by the next run_flow and by the background worker
# (feature_not_supported, nothing applied, the flow in error), and by
# create_flow when it is distributed (SCD 1 and 2) or a reference table
# before; the source of a change flow cannot be a distributed table (its
# rows are written on the workers), while a snapshot flow reads one, as
# does a flow with once => true.
#
# Runs on an installation that has Citus (test/citus.sh builds one:
# .ci/run); skipped elsewhere.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => 'Citus not built: run test/citus.sh, then this test on its installation (.ci/run)'
  unless -f "$pkglibdir/citus.so";

# Citus must be loaded first; its nodes talk over TCP on localhost
my @conf = (
	"shared_preload_libraries = 'citus,autocdc'", "listen_addresses = '127.0.0.1'",
	'max_connections = 100', 'max_prepared_transactions = 20', "citus.node_conninfo = 'sslmode=disable'",
	'citus.enable_statistics_collection = off', "autocdc.naptime = '100ms'");
my $coord = autocdc_node('coordinator', conf => \@conf);
my @workers = map { autocdc_node("worker$_", conf => \@conf) } 1 .. 2;
my $db = 'postgres';

$_->safe_psql($db, 'CREATE EXTENSION citus') for ($coord, @workers);
$coord->safe_psql($db, 'SELECT citus_set_coordinator_host(\'127.0.0.1\', ' . $coord->port . ')');
$coord->safe_psql($db, "SELECT citus_add_node('127.0.0.1', " . $_->port . ')') for @workers;
is($coord->safe_psql($db, 'SELECT count(*) FROM citus_get_active_worker_nodes()'), '2',
	'two workers');
# Citus propagates CREATE EXTENSION to the workers
$coord->safe_psql($db, 'CREATE EXTENSION autocdc');
is($_->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'autocdc'}), '1',
	$_->name . ' has autocdc') for @workers;

$coord->safe_psql($db, q{
	CREATE TABLE feed (id int, v text, seq int, op text);
	SELECT autocdc.create_flow('s1', 'feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$);
	SELECT autocdc.create_flow('s2', 'feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$,
							   stored_as_scd_type => '2');
	SELECT autocdc.create_flow('s3', 'feed', '{id}', 'seq', apply_as_deletes => $$op = 'D'$$);
	INSERT INTO feed SELECT g, 'a', 1, 'U' FROM generate_series(1, 10) g;
	SELECT autocdc.run_flow(f) FROM unnest('{s1,s2,s3}'::text[]) f;
});

# the targets distributed after create_flow
for my $t (qw(s1 s2 s3))
{
	my ($ret, $out, $err) = $coord->psql($db, "SELECT create_distributed_table('$t', 'id')");
	is($ret, 0, "$t distributed") or diag($err);
}
is($coord->safe_psql($db, q{
	SELECT string_agg(logicalrelid::text || partmethod::text, ',' ORDER BY 1) FROM pg_dist_partition}),
	's1h,s2h,s3h', 'Citus has the three targets');
# 7 updates and 3 deletes
$coord->safe_psql($db, q{
	INSERT INTO feed SELECT g, 'b', 2, 'U' FROM generate_series(1, 7) g;
	INSERT INTO feed SELECT g, NULL, 2, 'D' FROM generate_series(8, 10) g;});

# what a refused run must leave as it was: the target, the hidden state and the progress
sub fingerprint
{
	my ($flow) = @_;
	my $state = $coord->safe_psql($db, qq{
		SELECT 'autocdc_state.target_' || target_id FROM autocdc.flow WHERE name = '$flow'});
	return $coord->safe_psql($db, qq{
		SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM $flow t)
			   || ' ' || (SELECT count(*) FROM $state)
			   || ' ' || s.progress || ' ' || s.num_events
		  FROM autocdc.flow_state s WHERE s.name = '$flow'});
}

for my $case ([ 's1', 'SCD 1' ], [ 's2', 'SCD 2' ])
{
	my ($flow, $what) = @$case;
	my $before = fingerprint($flow);
	my ($ret, $out, $err) = $coord->psql($db,
		"\\set VERBOSITY verbose\nSELECT * FROM autocdc.run_flow('$flow')");
	like($err, qr/ERROR:  0A000: \Qflow "$flow": target "$flow" is a Citus distributed table\E/,
		"$what: run_flow refuses a target distributed after create_flow");
	like($err, qr/HINT:  Write the flow into an ordinary table on the coordinator\./, "$what: hint");
	is(fingerprint($flow), $before, "$what: target, hidden state and progress unchanged");
	is($coord->safe_psql($db, qq{
		SELECT state || ' ' || last_error_sqlstate FROM autocdc.flows WHERE name = '$flow'}),
		'error 0A000', "$what: the flow is in error");
}
is($coord->safe_psql($db, q{SELECT count(*) || ' ' || count(DISTINCT v) FROM s1}), '10 1',
	'SCD 1: the ten first rows, none lost');
is($coord->safe_psql($db, q{SELECT count(*) FROM s2 WHERE __end_at IS NULL}), '10',
	'SCD 2: the ten first versions, none lost');

# the background worker
my $before = fingerprint('s3');
$coord->safe_psql($db, q{ALTER SYSTEM SET autocdc.enabled = on; SELECT pg_reload_conf()});
ok($coord->poll_query_until($db, q{
	SELECT state = 'error' AND last_error_sqlstate = '0A000'
	   AND last_error = 'flow "s3": target "s3" is a Citus distributed table'
	  FROM autocdc.flows WHERE name = 's3'}), 'the worker puts the flow in error');
is(fingerprint('s3'), $before, 'the worker wrote nothing');
$coord->safe_psql($db, q{ALTER SYSTEM SET autocdc.enabled = off; SELECT pg_reload_conf()});

# targets distributed or replicated before create_flow; a distributed source
$coord->safe_psql($db, q{
	CREATE TABLE d (id int PRIMARY KEY, v text);
	SELECT create_distributed_table('d', 'id');
	CREATE TABLE r (id int PRIMARY KEY, v text);
	SELECT create_reference_table('r');
	CREATE TABLE dfeed (id int, v text, seq int);
	SELECT create_distributed_table('dfeed', 'id');});
my $err;
for my $case (
	[ q{SELECT autocdc.create_flow('d', 'feed', '{id}', 'seq', column_list => '{id,v}')},
		'target "d" is a Citus distributed table', 'a distributed target (SCD 1)' ],
	[ q{SELECT autocdc.create_flow('d', 'feed', '{id}', 'seq', column_list => '{id,v}', stored_as_scd_type => '2')},
		'target "d" is a Citus distributed table', 'a distributed target (SCD 2)' ],
	[ q{SELECT autocdc.create_flow('r', 'feed', '{id}', 'seq', column_list => '{id,v}')},
		'target "r" is a Citus reference table', 'a reference target' ],
	[ q{SELECT autocdc.create_snapshot_flow('d', 'feed', '{id,seq}')},
		'target "d" is a Citus distributed table', 'a distributed snapshot target' ],
	[ q{SELECT autocdc.create_flow('x2', 'changes(dfeed)', '{id}')},
		'source "dfeed" is a Citus distributed table', 'a distributed changes() source' ],
	[ q{SELECT autocdc.create_flow('x1', 'dfeed', '{id}', 'seq')},
		'source "dfeed" is a Citus distributed table', 'a distributed feed' ])
{
	my ($sql, $message, $what) = @$case;
	(undef, undef, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n$sql");
	like($err, qr/ERROR:  0A000: \Q$message\E/, "create_flow refuses $what");
}
like($err, qr/HINT:  Read it with a snapshot flow \(autocdc.create_snapshot_flow\), or let the application also insert its changes into a feed table on the coordinator\./,
	'with the workaround');
is($coord->safe_psql($db, q{SELECT string_agg(name, ',' ORDER BY name) FROM autocdc.flows}),
	's1,s2,s3', 'no flow created');

# the workaround: a snapshot flow reads a distributed table (as does a
# flow that reads its source once)
$coord->safe_psql($db, q{
	INSERT INTO dfeed SELECT g, 'v' || g, 1 FROM generate_series(1, 100) g;
	SELECT autocdc.create_flow('once1', 'dfeed', '{id}', 'seq', once => true);
	SELECT autocdc.run_flow('once1');
	SELECT autocdc.create_snapshot_flow('snap', 'dfeed', '{id}', stored_as_scd_type => '2');
	SELECT autocdc.run_flow('snap');
	UPDATE dfeed SET v = 'w' WHERE id <= 30;
	DELETE FROM dfeed WHERE id > 90;
	SELECT autocdc.run_flow('snap');});
is($coord->safe_psql($db, q{
	SELECT count(*) || ' ' || count(*) FILTER (WHERE __end_at IS NULL) FROM snap}),
	'130 90', 'a snapshot flow over a distributed table applies its changes');
is($coord->safe_psql($db, q{
	SELECT count(*) FROM ((SELECT id, v FROM snap WHERE __end_at IS NULL EXCEPT SELECT id, v FROM dfeed)
						  UNION ALL (SELECT id, v FROM dfeed EXCEPT SELECT id, v FROM snap WHERE __end_at IS NULL)) x}),
	'0', 'its current rows are the table\'s');
is($coord->safe_psql($db, q{SELECT count(*) || ' ' || sum(id) FROM once1}), '100 5050',
	'a flow with once => true reads a distributed table');

$_->stop for ($coord, @workers);
done_testing();
