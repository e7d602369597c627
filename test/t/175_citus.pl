
# Citus (docs/operations.md "Citus and partitioned targets"): a coordinator
# and two workers on localhost, Citus and autocdc preloaded on each.
#
# A target Citus distributes by one of the flow's keys is written by key:
# for SCD 1, SCD 2 and bitemporal flows (deletes, late events, truncates),
# into ordinary and partitioned distributed tables, the distributed target
# equals an ordinary target on the coordinator fed the same events, after
# every run; the hidden state is distributed co-located with it, its
# truncates kept on the coordinator.  The background worker applies a
# continuous flow into a distributed target; snapshot flows and changes()
# flows write distributed targets, full_refresh included, as do expectations
# and a snapshot flow beside a change flow; as_of over a
# distributed target equals as_of over the ordinary one.  An immediate stop
# of a worker node in the middle of a run (after it wrote the target,
# while it waits to write the hidden state) fails the run, which applies
# nothing; after the node's restart the next run is exact.  create_flow
# (distributed_by) and the statement form (CREATE STREAMING TABLE ...
# DISTRIBUTED BY) distribute a target they create, by one of the keys.
#
# Refused, applying nothing: a target distributed by a column outside the
# keys, a reference table, a target distributed after its first flow was
# created (by run_flow and by the worker), and a distributed source of a
# change flow (a snapshot flow reads one instead, as does a flow with
# once => true).  The coordinator's database dumps and restores: the
# restored target (a table on the coordinator) and its hidden state,
# distributed again as docs/operations.md says, carry on exactly.
#
# Runs on an installation that has Citus (test/citus.sh builds one:
# .ci/run); skipped elsewhere.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

plan skip_all => 'Citus not built: run test/citus.sh, then this test on its installation (.ci/run)'
  unless citus_built();

my ($coord, @workers) = citus_nodes(conf => ["autocdc.naptime = '100ms'"]);
my $db = 'postgres';
is($coord->safe_psql($db, 'SELECT count(*) FROM citus_get_active_worker_nodes()'), '2',
	'two workers');
is($_->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'autocdc'}), '1',
	$_->name . ' has autocdc (Citus propagates CREATE EXTENSION)') for @workers;

# what a refused or failed run must leave as it was: the target, the hidden
# state (and its truncates) and the progress
sub fingerprint
{
	my ($flow) = @_;
	my $id = $coord->safe_psql($db, qq{SELECT target_id FROM autocdc.flow WHERE name = '$flow'});
	my $truncates = $coord->safe_psql($db,
		qq{SELECT to_regclass('autocdc_state.target_${id}_truncates') IS NOT NULL});
	return $coord->safe_psql($db, qq{
		SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM $flow t)
			   || ' ' || (SELECT md5(string_agg(s::text, ',' ORDER BY s::text)) FROM autocdc_state.target_$id s)
			   || ' ' || } . ($truncates eq 't' ? "(SELECT count(*) FROM autocdc_state.target_${id}_truncates)" : "''") . qq{
			   || ' ' || s.progress || ' ' || s.num_events
		  FROM autocdc.flow_state s WHERE s.name = '$flow'});
}

# the rows of a table, ordered, as text (without the hidden columns)
sub rows
{
	my ($t, $order) = @_;
	return $coord->safe_psql($db, "SELECT string_agg(t::text, ',' ORDER BY $order) FROM $t t");
}

############################################################################
# Distributed targets beside ordinary ones, fed the same events.
############################################################################

# kind => [create_flow options, target columns, the order of its rows]
my %kinds = (
	scd1 => [ q{}, 'id int, grp int, v text', 'id' ],
	scd2 => [ q{, stored_as_scd_type => '2'},
		'id int, grp int, v text, __start_at int, __end_at int', 'id, __start_at' ],
	bt => [ q{, stored_as_scd_type => 'bitemporal', system_sequence_by => 'sys'},
		'id int, grp int, v text, __start_at int, __end_at int, __system_start_at int, __system_end_at int',
		'id, __start_at, __system_start_at' ]);
$coord->safe_psql($db, q{CREATE TABLE feed (id int, grp int, v text, seq int, sys int, op text)});
for my $k (sort keys %kinds)
{
	my ($opts, $cols) = @{ $kinds{$k} };
	my $flow_opts = qq{'seq', except_column_list => '{op,seq,sys}', apply_as_deletes => \$\$op = 'D'\$\$,
		apply_as_truncates => \$\$op = 'T'\$\$$opts};
	$coord->safe_psql($db, qq{
		-- ordinary, on the coordinator (made by create_flow)
		SELECT autocdc.create_flow('p_$k', 'feed', '{id}', $flow_opts);
		-- distributed by the key
		CREATE TABLE d_$k ($cols);
		SELECT create_distributed_table('d_$k', 'id');
		SELECT autocdc.create_flow('d_$k', 'feed', '{id}', $flow_opts);
		-- partitioned by hash of the key, distributed by it
		CREATE TABLE dp_$k ($cols) PARTITION BY HASH (id);
		CREATE TABLE dp_${k}_0 PARTITION OF dp_$k FOR VALUES WITH (MODULUS 2, REMAINDER 0);
		CREATE TABLE dp_${k}_1 PARTITION OF dp_$k FOR VALUES WITH (MODULUS 2, REMAINDER 1);
		SELECT create_distributed_table('dp_$k', 'id');
		SELECT autocdc.create_flow('dp_$k', 'feed', '{id}', $flow_opts);});
}
my $sid = $coord->safe_psql($db, q{SELECT target_id FROM autocdc.flow WHERE name = 'd_scd2'});
is($coord->safe_psql($db, qq{
	SELECT count(DISTINCT colocationid) || ' ' || string_agg(partmethod::text, '' ORDER BY logicalrelid::text)
	  FROM pg_dist_partition
	 WHERE logicalrelid IN ('d_scd2'::regclass, 'autocdc_state.target_$sid'::regclass)}),
	'1 hh', 'the hidden state is distributed, co-located with the target');
is($coord->safe_psql($db, qq{
	SELECT count(*) FROM pg_dist_partition
	 WHERE logicalrelid = 'autocdc_state.target_${sid}_truncates'::regclass}),
	'0', 'its truncates stay on the coordinator');

my @batches = (
	q{SELECT g, g % 3, 'a', 1, 1, 'U' FROM generate_series(1, 40) g},
	q{SELECT g, g % 3, 'b', 3, 2, 'U' FROM generate_series(1, 30) g
	  UNION ALL SELECT g, NULL, NULL, 3, 2, 'D' FROM generate_series(31, 35) g},
	# late events: before the versions they arrive after
	q{SELECT g, 7, 'late', 2, 3, 'U' FROM generate_series(1, 45, 4) g},
	# a truncate at 4, events before and after it
	q{SELECT NULL::int, NULL::int, NULL, 4, 4, 'T'
	  UNION ALL SELECT g, 1, 'c', 5, 4, 'U' FROM generate_series(1, 10) g
	  UNION ALL SELECT g, 1, 'old', 3, 5, 'U' FROM generate_series(11, 20) g},
	q{SELECT g, 2, 'd', 6, 6, 'U' FROM generate_series(5, 25) g
	  UNION ALL SELECT 3, NULL, NULL, 7, 6, 'D'});
my $run = 0;
for my $batch (@batches)
{
	$run++;
	$coord->safe_psql($db, "INSERT INTO feed $batch");
	for my $k (sort keys %kinds)
	{
		my $order = $kinds{$k}[2];
		my @n = map {
			$coord->safe_psql($db, "SELECT num_events FROM autocdc.run_flow('${_}_$k')")
		} qw(p d dp);
		is("$n[1] $n[2]", "$n[0] $n[0]", "run $run, $k: the same events");
		my $want = rows("p_$k", $order);
		is(rows("d_$k", $order), $want, "run $run, $k: the distributed target equals the ordinary one");
		is(rows("dp_$k", $order), $want,
			"run $run, $k: the partitioned distributed target equals the ordinary one");
	}
}
is($coord->safe_psql($db, qq{SELECT count(*) FROM autocdc_state.target_${sid}_truncates}), '1',
	'the truncate kept on the coordinator');

# as_of over a distributed target
is($coord->safe_psql($db, q{
	SELECT count(*) FILTER (WHERE d IS DISTINCT FROM p) || ' of ' || count(*)
	  FROM generate_series(0, 8) x,
		   LATERAL (SELECT string_agg(r::text, ',' ORDER BY r::text) FROM autocdc.as_of(NULL::d_scd2, x) r) d(d),
		   LATERAL (SELECT string_agg(r::text, ',' ORDER BY r::text) FROM autocdc.as_of(NULL::p_scd2, x) r) p(p)}),
	'0 of 9', 'as_of over a distributed SCD 2 target equals as_of over the ordinary one');
is($coord->safe_psql($db, q{
	SELECT count(*) FILTER (WHERE d IS DISTINCT FROM p) || ' of ' || count(*)
	  FROM generate_series(0, 8) x, generate_series(0, 7) y,
		   LATERAL (SELECT string_agg(r::text, ',' ORDER BY r::text) FROM autocdc.as_of(NULL::d_bt, x, y) r) d(d),
		   LATERAL (SELECT string_agg(r::text, ',' ORDER BY r::text) FROM autocdc.as_of(NULL::p_bt, x, y) r) p(p)}),
	'0 of 72', 'as_of over a distributed bitemporal target equals as_of over the ordinary one');

############################################################################
# A worker node stopped in the middle of a run.
############################################################################

$coord->safe_psql($db, q{INSERT INTO feed SELECT g, 3, 'e', 8, 7, 'U' FROM generate_series(1, 40) g});
my $before = fingerprint('d_scd2');
# hold off the run's writes to the hidden state's shards on worker 2
my $state_shards = $coord->safe_psql($db, qq{
	SELECT string_agg(shard_name('autocdc_state.target_$sid'::regclass, s.shardid), ', ')
	  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
		   JOIN pg_dist_node n USING (groupid)
	 WHERE s.logicalrelid = 'autocdc_state.target_$sid'::regclass AND n.nodeport = } . $workers[1]->port);
my $locker = $workers[1]->background_psql($db);
$locker->query_safe("SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE $state_shards IN SHARE MODE");
my $runner = $coord->background_psql($db, on_error_stop => 0);
$runner->query_until(qr/started/, q{
	\echo started
	SELECT 'RUN:' || num_events FROM autocdc.run_flow('d_scd2');
});
ok($workers[1]->poll_query_until($db, q{
	SELECT count(*) > 0 FROM pg_locks
	 WHERE NOT granted AND relation::regclass::text LIKE 'autocdc_state.target\_%'}),
	'the run wrote the target and waits to write the hidden state on worker 2');
$workers[0]->stop('immediate');
$locker->query_safe('COMMIT');
$locker->quit;
# (psql runs one statement after the other: "done" follows the run's end)
my $out = $runner->query_until(qr/done/, "\\echo done\n");
my $err = $runner->{stderr};
$runner->quit;
unlike($out, qr/RUN:/, 'the run did not finish');
like($err, qr/ERROR/, 'the run failed') or diag($out);
$workers[0]->start;
is(fingerprint('d_scd2'), $before, 'the failed run applied nothing');
$coord->safe_psql($db, q{SELECT autocdc.run_flow(f) FROM unnest('{d_scd2,p_scd2}'::text[]) f});
is(rows('d_scd2', 'id, __start_at'), rows('p_scd2', 'id, __start_at'),
	'after the restart, the next run is exact');

############################################################################
# Snapshot flows and changes() flows; full_refresh.
############################################################################

$coord->safe_psql($db, q{
	CREATE TABLE src (id int PRIMARY KEY, v text);
	INSERT INTO src SELECT g, 'a' FROM generate_series(1, 30) g;
	CREATE TABLE d_snap (id int, v text, __start_at timestamptz, __end_at timestamptz);
	SELECT create_distributed_table('d_snap', 'id');
	SELECT autocdc.create_snapshot_flow('d_snap', 'src', '{id}', stored_as_scd_type => '2');
	SELECT autocdc.create_snapshot_flow('p_snap', 'src', '{id}', stored_as_scd_type => '2');
	CREATE TABLE d_chg (id int, v text);
	SELECT create_distributed_table('d_chg', 'id');
	SELECT autocdc.create_flow('d_chg', 'changes(src)', '{id}');
	SELECT autocdc.create_flow('p_chg', 'changes(src)', '{id}');});
my @changes = (
	q{UPDATE src SET v = 'b' WHERE id <= 10; DELETE FROM src WHERE id > 25},
	q{TRUNCATE src; INSERT INTO src SELECT g, 'c' FROM generate_series(5, 15) g},
	q{UPDATE src SET v = 'd' WHERE id % 2 = 0});
for my $i (0 .. @changes)
{
	$coord->safe_psql($db, $changes[ $i - 1 ]) if $i > 0;
	$coord->safe_psql($db, q{SELECT autocdc.run_flow(f) FROM unnest('{d_snap,p_snap,d_chg,p_chg}'::text[]) f});
	is(rows('d_snap', 'id, __start_at'), rows('p_snap', 'id, __start_at'),
		"snapshot $i: the distributed target equals the ordinary one");
	is(rows('d_chg', 'id'), rows('p_chg', 'id'), "changes() $i: the distributed target equals the ordinary one");
}
$coord->safe_psql($db, q{
	UPDATE src SET v = 'e' WHERE id = 5;
	SELECT autocdc.full_refresh(f) FROM unnest('{d_snap,p_snap,d_chg,p_chg,d_scd1,p_scd1}'::text[]) f;});
is(rows('d_snap', 'id, __start_at'), rows('p_snap', 'id, __start_at'),
	'full_refresh of a snapshot flow: the distributed target equals the ordinary one');
is(rows('d_chg', 'id'), rows('p_chg', 'id'),
	'full_refresh of a changes() flow (target kept): the distributed target equals the ordinary one');
is(rows('d_scd1', 'id'), rows('p_scd1', 'id'),
	'full_refresh of a feed flow: the distributed target equals the ordinary one');
is($coord->safe_psql($db, q{SELECT count(*) FROM d_chg WHERE v = 'e'}), '1', 'and it read the change');

############################################################################
# Targets create_flow and the statement form distribute.
############################################################################

$coord->safe_psql($db, q{
	CREATE TABLE kfeed (id int, grp int, v text, seq int);
	SELECT autocdc.create_flow('k1', 'kfeed', '{id}', 'seq', stored_as_scd_type => '2',
							   except_column_list => '{seq}', distributed_by => 'id');
	SELECT * FROM autocdc.execute($$
		CREATE STREAMING TABLE k2 (id int, grp int, v text) DISTRIBUTED BY (id);
		CREATE FLOW k2 AS AUTO CDC INTO k2 FROM kfeed KEYS (id) SEQUENCE BY seq COLUMNS * EXCEPT (seq);$$);
	INSERT INTO kfeed SELECT g, g % 2, 'a', 1 FROM generate_series(1, 20) g;
	INSERT INTO kfeed SELECT g, g % 2, 'b', 2 FROM generate_series(1, 10) g;
	SELECT autocdc.run_flow('k1'); SELECT autocdc.run_flow('k2');});
is($coord->safe_psql($db, q{
	SELECT string_agg(logicalrelid::text || ':' || column_to_column_name(logicalrelid, partkey), ','
					  ORDER BY logicalrelid::text)
	  FROM pg_dist_partition WHERE logicalrelid IN ('k1'::regclass, 'k2'::regclass)}),
	'k1:id,k2:id', 'create_flow (distributed_by) and DISTRIBUTED BY distribute the target by the key');
is($coord->safe_psql($db, q{
	SELECT (SELECT count(*) || '/' || count(*) FILTER (WHERE __end_at IS NULL) FROM k1) || ' '
		   || (SELECT count(*) FILTER (WHERE v = 'b') FROM k2)}),
	'30/20 10', 'and their flows write them');
for my $case (
	[ q{SELECT autocdc.create_flow('k3', 'kfeed', '{id}', 'seq', distributed_by => 'grp')},
		'22023', q{distributed_by must name one of the flow's keys, not "grp"}, 'a column outside the keys' ],
	[ q{SELECT autocdc.create_flow('k2', 'kfeed', '{id}', 'seq', name => 'k4', distributed_by => 'grp')},
		'22023', 'target "k2" exists and is not distributed by column "grp"', 'another column of an existing target' ],
	[ q{SELECT * FROM autocdc.execute('CREATE STREAMING TABLE k5 DISTRIBUTED BY (id)')},
		'0A000', q{DISTRIBUTED BY needs the streaming table's column definitions}, 'DISTRIBUTED BY without columns' ])
{
	my ($sql, $code, $message, $what) = @$case;
	(undef, undef, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n$sql");
	like($err, qr/ERROR:  $code: \Q$message\E/, "refused: $what");
}

# README's example (the block that needs Citus)
my ($readme) = slurp_file(($ENV{TESTDIR} // '.') . '/README.md') =~ /^```postgresql\n(.*?)^```$/ms;
ok(defined $readme, 'README has its Citus example');
$coord->safe_psql($db, $readme);
$coord->safe_psql($db, q{
	INSERT INTO orders_feed VALUES (1, 'new', 1), (2, 'new', 1), (1, 'paid', 2);
	SELECT autocdc.run_flow('orders');});
is($coord->safe_psql($db, q{
	SELECT column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition
	 WHERE logicalrelid = 'orders'::regclass}), 'id', 'README\'s example: the target is distributed by id');
is($coord->safe_psql($db, q{
	SELECT string_agg(id || ':' || status || ':' || (__end_at IS NULL), ',' ORDER BY id, __start_at)
	  FROM orders}),
	'1:new:false,1:paid:true,2:new:true', 'README\'s example: its SCD 2 history');

# a column added to a changes() source with a default that fills its rows
# without logging them: a distributed target cannot take the value as an
# ordinary one does (in its catalog), so the flow needs a resync
$coord->safe_psql($db, q{ALTER TABLE src ADD COLUMN w int DEFAULT 7});
(undef, undef, $err) = $coord->psql($db, "\\set VERBOSITY verbose\nSELECT * FROM autocdc.run_flow('d_chg')");
like($err, qr/ERROR:  55000: flow "d_chg": column "w" was added to source "src" with a default/,
	'a column added with a default: the distributed target needs a resync');
$coord->safe_psql($db, q{
	SELECT autocdc.full_refresh('d_chg'); SELECT autocdc.run_flow('p_chg');});
is(rows('d_chg', 'id'), rows('p_chg', 'id'), 'full_refresh reads it: the ordinary target\'s rows');
is($coord->safe_psql($db, q{SELECT count(*) FILTER (WHERE w = 7) || '/' || count(*) FROM d_chg}),
	$coord->safe_psql($db, q{SELECT count(*) || '/' || count(*) FROM src}), 'with the new column\'s value');

# expectations and tombstone_retention on a distributed target
$coord->safe_psql($db, q{
	CREATE TABLE efeed (id int, v text, seq int, op text);
	SELECT autocdc.create_flow('e1', 'efeed', '{id}', 'seq', column_list => '{id,v}',
							   apply_as_deletes => $$op = 'D'$$, tombstone_retention => '1 day',
							   distributed_by => 'id');
	SELECT autocdc.set_expectation('e1', 'not_bad', $$v <> 'bad'$$, 'drop');
	SELECT autocdc.set_expectation('e1', 'not_fatal', $$v <> 'fatal'$$, 'fail');
	INSERT INTO efeed VALUES (1, 'a', 1, 'U'), (2, 'bad', 1, 'U'), (3, 'c', 1, 'U'), (3, NULL, 2, 'D');
	SELECT autocdc.run_flow('e1');});
is($coord->safe_psql($db, q{
	SELECT (SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM e1) || ' '
		   || (SELECT string_agg(name || ':' || num_passed || '/' || num_failed, ',' ORDER BY name)
				 FROM autocdc.expectations WHERE target = 'e1'::regclass)}),
	'1:a not_bad:2/1,not_fatal:3/0', 'a drop expectation on a distributed target');
$before = fingerprint('e1');
$coord->safe_psql($db, q{INSERT INTO efeed VALUES (1, 'fatal', 3, 'U'), (4, 'd', 3, 'U')});
(undef, undef, $err) = $coord->psql($db, q{SELECT * FROM autocdc.run_flow('e1')});
like($err, qr/violates expectation "not_fatal"/, 'a fail expectation fails the run');
is(fingerprint('e1'), $before, 'which applies nothing');

# a snapshot flow and a change flow into one distributed target
$coord->safe_psql($db, q{
	CREATE TABLE msnap (id int, v text);
	INSERT INTO msnap VALUES (1, 's1'), (5, 's5');
	CREATE TABLE m (id int, v text);
	SELECT create_distributed_table('m', 'id');
	SELECT autocdc.create_snapshot_flow('m', 'msnap', '{id}');
	SELECT autocdc.run_flow('m');
	CREATE TABLE mfeed (id int, v text, seq timestamptz);
	SELECT autocdc.create_flow('m', 'mfeed', '{id}', 'seq', name => 'mf', column_list => '{id,v}');
	INSERT INTO mfeed VALUES (5, 'f5', now()), (6, 'f6', now());
	SELECT autocdc.run_flow('mf');});
is($coord->safe_psql($db, q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM m}),
	'1:s1,5:f5,6:f6', 'change events after a snapshot, into a distributed target');
$coord->safe_psql($db, q{
	UPDATE msnap SET v = 's1b' WHERE id = 1; DELETE FROM msnap WHERE id = 5;
	SELECT autocdc.run_flow('m');});
is($coord->safe_psql($db, q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM m}),
	'1:s1b', 'the next snapshot replaces what came before it');

############################################################################
# The background worker.
############################################################################

$coord->safe_psql($db, q{
	CREATE TABLE wfeed (id int, v text, seq int);
	CREATE TABLE d_w (id int, v text, __start_at int, __end_at int);
	SELECT create_distributed_table('d_w', 'id');
	SELECT autocdc.create_flow('d_w', 'wfeed', '{id}', 'seq', column_list => '{id,v}', stored_as_scd_type => '2',
							   continuous => true);
	ALTER SYSTEM SET autocdc.enabled = on; SELECT pg_reload_conf();
	INSERT INTO wfeed SELECT g, 'a', 1 FROM generate_series(1, 50) g;});
ok($coord->poll_query_until($db, q{SELECT count(*) = 50 FROM d_w}),
	'the worker applies a continuous flow into a distributed target');
$coord->safe_psql($db, q{INSERT INTO wfeed SELECT g, 'b', 2 FROM generate_series(1, 20) g});
ok($coord->poll_query_until($db, q{
	SELECT count(*) = 70 AND count(*) FILTER (WHERE __end_at IS NULL) = 50 FROM d_w}),
	'and its next events');
ok($coord->poll_query_until($db, q{SELECT num_events || ' ' || state FROM autocdc.flows WHERE name = 'd_w'},
		'70 idle'), 'each event applied once (the flow then idle)');

############################################################################
# Refused: tables distributed otherwise, or after the flow.
############################################################################

$coord->safe_psql($db, q{ALTER SYSTEM SET autocdc.enabled = off; SELECT pg_reload_conf()});
$coord->safe_psql($db, q{
	CREATE TABLE sfeed (id int, v text, seq int);
	INSERT INTO sfeed SELECT g, 'a', 1 FROM generate_series(1, 10) g;
	CREATE TABLE s1 (id int, v text);
	SELECT autocdc.create_flow('s1', 'sfeed', '{id}', 'seq', column_list => '{id,v}');
	SELECT autocdc.run_flow('s1');
	SELECT create_distributed_table('s1', 'id');
	INSERT INTO sfeed VALUES (1, 'f', 9);});
$before = fingerprint('s1');
(undef, $out, $err) = $coord->psql($db, "\\set VERBOSITY verbose\nSELECT * FROM autocdc.run_flow('s1')");
like($err, qr/ERROR:  0A000: \Qflow "s1": target "s1" is a Citus distributed table, but its hidden state is not distributed with it\E/,
	'run_flow refuses a target distributed after create_flow');
like($err, qr/HINT:  Distribute a target before creating its first flow/, 'with a hint');
is(fingerprint('s1'), $before, 'target, hidden state and progress unchanged');
$coord->safe_psql($db, q{ALTER SYSTEM SET autocdc.enabled = on; SELECT pg_reload_conf()});
ok($coord->poll_query_until($db, q{
	SELECT state = 'error' AND last_error_sqlstate = '0A000' FROM autocdc.flows WHERE name = 's1'}),
	'the worker puts the flow in error');
is(fingerprint('s1'), $before, 'the worker wrote nothing');
$coord->safe_psql($db, q{ALTER SYSTEM SET autocdc.enabled = off; SELECT pg_reload_conf()});

$coord->safe_psql($db, q{
	CREATE TABLE bygrp (id int, grp int, v text);
	SELECT create_distributed_table('bygrp', 'grp');
	CREATE TABLE r (id int, v text);
	SELECT create_reference_table('r');
	CREATE TABLE dfeed (id int, v text, seq int);
	SELECT create_distributed_table('dfeed', 'id');});
for my $case (
	[ q{SELECT autocdc.create_flow('bygrp', 'feed', '{id}', 'seq', column_list => '{id,grp,v}')},
		'target "bygrp" is distributed by column "grp", which is not one of the flow\'s keys',
		qr/HINT:  Distribute the target by one of the flow's keys: SELECT alter_distributed_table\('public.bygrp', distribution_column => 'id'\)\./,
		'a target distributed by a column outside the keys' ],
	[ q{SELECT autocdc.create_flow('r', 'feed', '{id}', 'seq', column_list => '{id,v}')},
		'target "r" is a Citus reference table',
		qr/HINT:  Distribute it by one of the flow's keys with create_distributed_table, or write the flow into a table on the coordinator\./,
		'a reference target' ],
	[ q{SELECT autocdc.create_snapshot_flow('r', 'feed', '{id,seq}')},
		'target "r" is a Citus reference table', qr/HINT/, 'a reference snapshot target' ],
	[ q{SELECT autocdc.create_flow('x2', 'changes(dfeed)', '{id}')},
		'source "dfeed" is a Citus distributed table', qr/HINT/, 'a distributed changes() source' ],
	[ q{SELECT autocdc.create_flow('x1', 'dfeed', '{id}', 'seq')},
		'source "dfeed" is a Citus distributed table',
		qr/HINT:  Read it with a snapshot flow \(autocdc.create_snapshot_flow\), or let the application also insert its changes into a feed table on the coordinator\./,
		'a distributed feed' ])
{
	my ($sql, $message, $hint, $what) = @$case;
	(undef, undef, $err) = $coord->psql($db, "\\set VERBOSITY verbose\n$sql");
	like($err, qr/ERROR:  0A000: \Q$message\E/, "create_flow refuses $what");
	like($err, $hint, "$what: hint");
}
is($coord->safe_psql($db, q{SELECT count(*) FROM autocdc.flows WHERE name IN ('bygrp', 'r', 'x1', 'x2')}),
	'0', 'no flow created');

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

# dropping a flow drops its distributed hidden state and its truncates
$coord->safe_psql($db, q{SELECT autocdc.drop_flow('d_scd2', true)});
is($coord->safe_psql($db, qq{
	SELECT count(*) FROM pg_class WHERE relname LIKE 'target\\_${sid}%'
	   AND relnamespace = 'autocdc_state'::regnamespace}), '0',
	'drop_flow drops the distributed hidden state and its truncates');

############################################################################
# Dump and restore of the coordinator's flows.
############################################################################

# databases src and dst, each a Citus cluster of the same nodes
for my $d (qw(src dst))
{
	for my $n ($coord, @workers)
	{
		$n->safe_psql('postgres', "CREATE DATABASE $d");
		$n->safe_psql($d, 'CREATE EXTENSION citus');
	}
	$coord->safe_psql($d, "SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ')');
	$coord->safe_psql($d, "SELECT citus_add_node('127.0.0.1', " . $_->port . ')') for @workers;
}
$coord->safe_psql('src', q{
	CREATE EXTENSION autocdc;
	CREATE TABLE feed (id int, v text, seq int, op text);
	SELECT autocdc.create_flow('h', 'feed', '{id}', 'seq', stored_as_scd_type => '2',
							   column_list => '{id,v}', apply_as_truncates => $$op = 'T'$$,
							   distributed_by => 'id');
	SELECT autocdc.create_flow('p', 'feed', '{id}', 'seq', stored_as_scd_type => '2',
							   column_list => '{id,v}', apply_as_truncates => $$op = 'T'$$);
	INSERT INTO feed VALUES (1, 'a', 1, 'U'), (2, 'b', 1, 'U'), (NULL, NULL, 2, 'T'), (1, 'c', 3, 'U');
	SELECT autocdc.run_flow('h'); SELECT autocdc.run_flow('p');});
my $hist = $coord->safe_psql('src', 'SELECT * FROM h ORDER BY id, __start_at');
my $dump = $coord->basedir . '/src.sql';
$coord->command_ok([ 'pg_dump', '-d', $coord->connstr('src'), '-f', $dump ],
	'pg_dump of the coordinator\'s database with a distributed flow');
(my $rc, undef, $err) = $coord->psql('dst', undef, extra_params => [ '-f', $dump ]);
is($coord->safe_psql('dst', 'SELECT * FROM h ORDER BY id, __start_at'), $hist,
	'the restore brings the target\'s rows back (into a table on the coordinator)');
is($coord->safe_psql('dst', 'SELECT name || \':\' || state FROM autocdc.flows ORDER BY name'),
	"h:needs_resync\np:needs_resync", 'the restored flows need a resync');
# distributed again as docs/operations.md says: the target, then its hidden
# state co-located (its truncates stay on the coordinator)
my $tid = $coord->safe_psql('dst', q{SELECT target_id FROM autocdc.flow WHERE name = 'h'});
$coord->safe_psql('dst', qq{
	SELECT create_distributed_table('h', 'id');
	SELECT create_distributed_table('autocdc_state.target_$tid', 'id', colocate_with => 'h');});
is($coord->safe_psql('dst', q{
	SELECT num_upserted_rows || ' ' || num_deleted_rows FROM autocdc.full_refresh('h')}),
	'0 0', 'full_refresh of the restored, distributed again flow changes nothing');
$coord->safe_psql('dst', q{
	SELECT autocdc.full_refresh('p');
	INSERT INTO feed VALUES (2, 'd', 5, 'U'), (NULL, NULL, 4, 'T'), (3, 'e', 6, 'U'), (1, 'late', 2, 'U');
	SELECT autocdc.run_flow('h'); SELECT autocdc.run_flow('p');});
is($coord->safe_psql('dst', 'SELECT string_agg(t::text, \',\' ORDER BY id, __start_at) FROM h t'),
	$coord->safe_psql('dst', 'SELECT string_agg(t::text, \',\' ORDER BY id, __start_at) FROM p t'),
	'its next run (a truncate, a late event) gives the ordinary target\'s rows');
is($coord->safe_psql('dst', q{SELECT state FROM autocdc.flows WHERE name = 'h'}), 'idle',
	'and the flow is idle');

$_->stop for ($coord, @workers);
done_testing();
