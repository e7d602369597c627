
# The background worker (semantics §5): continuous apply without run_flow, woken
# at commit; continuous snapshot flows; pause/resume; coexistence with run_flow (same result as one
# applier, every event exactly once); error state, back-off and recovery
# after skip_events while other flows go on; SIGKILL (crash restart),
# SIGTERM of worker and launcher, server restart; and every drop path:
# drop_flow, DROP EXTENSION, DROP DATABASE, ALTER DATABASE RENAME / SET
# TABLESPACE, CREATE DATABASE ... TEMPLATE, a failing DDL, run by a
# non-superuser where PostgreSQL allows it - nothing left behind.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

# a long naptime: a worker that applies within seconds was woken at commit
my $node = autocdc_node('worker', worker => 1,
	conf => ["autocdc.naptime = '20s'", "autocdc.snapshot_interval = '2s'", 'restart_after_crash = on']);

# pids of the workers (comma-separated) of a database
sub workers
{
	my ($db) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '')
		  FROM pg_stat_activity WHERE backend_type = 'autocdc worker' AND datname = '$db'
		   AND application_name <> 'autocdc laggard worker'});
}

sub launcher
{
	return $node->safe_psql('postgres', q{
		SELECT coalesce(string_agg(pid::text, ','), '')
		  FROM pg_stat_activity WHERE backend_type = 'autocdc launcher'});
}

sub wait_for
{
	my ($db, $sql, $what) = @_;
	ok($node->poll_query_until($db, $sql), $what);
}

# a target and its reference (same flow definition, applied by run_flow) agree
sub same_rows
{
	my ($db, $a, $b) = @_;
	return $node->safe_psql($db, qq{
		SELECT count(*) = 0 FROM ((TABLE $a EXCEPT ALL TABLE $b)
								  UNION ALL (TABLE $b EXCEPT ALL TABLE $a)) d});
}

# events: 40 keys, random sequences (ties and late events), 10% deletes
sub insert_events
{
	my ($db, $feed, $n) = @_;
	$node->safe_psql($db, qq{
		INSERT INTO $feed
		SELECT (random() * 40)::int, md5(random()::text), (random() * 1000)::int,
			   CASE WHEN random() < 0.1 THEN 'D' ELSE 'U' END
		  FROM generate_series(1, $n)});
}

my $flows_sql = q{
	CREATE EXTENSION autocdc;
	CREATE TABLE feed (k int, v text, seq int, op text);
	SELECT autocdc.create_flow('t1', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''');
	SELECT autocdc.create_flow('t2', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   stored_as_scd_type => '2');
	SELECT autocdc.create_flow('r1', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   continuous => false);
	SELECT autocdc.create_flow('r2', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   stored_as_scd_type => '2', continuous => false);
};

# --- launcher, one worker per database with autocdc ----------------------
wait_for('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc launcher'},
	'the launcher runs');
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', $flows_sql);
wait_for('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname = 'app'},
	'CREATE EXTENSION starts a worker for the database');
is(workers('postgres'), '', 'no worker stays in a database without autocdc');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
		 WHERE backend_type = 'autocdc worker' AND datname LIKE 'template%'}),
	'0', 'no worker in template databases');

# --- continuous apply, no run_flow -----------------------------------------
$node->safe_psql('app', 'SELECT * FROM autocdc.run_flow(\'r1\')');	# creates the slot
insert_events('app', 'feed', 300);
wait_for('app', q{SELECT bool_and(num_events = 300) FROM autocdc.flows WHERE name IN ('t1', 't2')},
	'the worker applies both flows within seconds of the commit (naptime is 20 s)');
$node->safe_psql('app', q{SELECT * FROM autocdc.run_flow('r1'); SELECT * FROM autocdc.run_flow('r2')});
is(same_rows('app', 't1', 'r1'), 't', 'SCD 1 target equals the run_flow reference');
is(same_rows('app', 't2', 'r2'), 't', 'SCD 2 target equals the run_flow reference');
is($node->safe_psql('app', q{SELECT count(*) > 0 FROM autocdc.flow_runs WHERE flow = 't1' AND status = 'ok'}),
	't', 'worker runs are logged');
like($node->safe_psql('postgres', q{SELECT query FROM pg_stat_activity WHERE backend_type = 'autocdc worker'}),
	qr/^autocdc: /, 'pg_stat_activity shows what the worker does');

# --- pause and resume --------------------------------------------------------
$node->safe_psql('app', q{SELECT autocdc.pause_flow('t1')});
insert_events('app', 'feed', 50);
wait_for('app', q{SELECT num_events = 350 FROM autocdc.flows WHERE name = 't2'},
	'the other flow goes on');
is($node->safe_psql('app', q{SELECT state || ' ' || num_events FROM autocdc.flows WHERE name = 't1'}),
	'paused 300', 'a paused flow is left alone');
$node->safe_psql('app', q{SELECT autocdc.resume_flow('t1')});
wait_for('app', q{SELECT num_events = 350 FROM autocdc.flows WHERE name = 't1'},
	'a resumed flow catches up');

# --- autocdc.batch_size bounds a pass, cut at transaction boundaries ------
$node->safe_psql('app', q{ALTER SYSTEM SET autocdc.batch_size = 20; SELECT pg_reload_conf()});
$node->safe_psql('app', q{SELECT autocdc.pause_flow('t1'); SELECT autocdc.pause_flow('t2')});
my $runs_before = $node->safe_psql('app', q{SELECT coalesce(max(id), 0) FROM autocdc.flow_runs});
$node->safe_psql('app', q{
	DO $$ BEGIN FOR i IN 1..100 LOOP
		INSERT INTO feed VALUES (i % 40, 'batch', 2000 + i, 'U');
		COMMIT;
	END LOOP; END $$});
$node->safe_psql('app', q{SELECT autocdc.resume_flow('t1'); SELECT autocdc.resume_flow('t2')});
wait_for('app', q{SELECT bool_and(num_events = 450) FROM autocdc.flows WHERE name IN ('t1', 't2')},
	'a backlog is applied in several passes');
# a pass stops once it has decoded 20 events for its flows together (each
# transaction holds one event per flow), so no run of a flow exceeds 20
is($node->safe_psql('app', qq{SELECT max(num_events) <= 20 AND count(*) >= 10 FROM autocdc.flow_runs
							   WHERE id > $runs_before AND flow IN ('t1', 't2')}),
	't', 'each pass stops at a transaction boundary once autocdc.batch_size events are decoded');
$node->safe_psql('app', q{ALTER SYSTEM RESET autocdc.batch_size; SELECT pg_reload_conf()});

# --- continuous snapshot flows, every autocdc.snapshot_interval -------------
$node->safe_psql('app', q{
	CREATE TABLE snap (k int PRIMARY KEY, v text);
	INSERT INTO snap VALUES (1, 'a'), (2, 'b');
	SELECT autocdc.create_snapshot_flow('snap_t', 'snap', '{k}', stored_as_scd_type => '2');
});
wait_for('app', q{SELECT count(*) = 2 FROM snap_t}, 'the worker takes a snapshot flow\'s first snapshot');
$node->safe_psql('app', q{UPDATE snap SET v = 'b2' WHERE k = 2; DELETE FROM snap WHERE k = 1});
wait_for('app', q{SELECT count(*) = 3 AND count(*) FILTER (WHERE __end_at IS NULL) = 1 FROM snap_t},
	'and later ones on its own');
# a query's flow: the worker reads its snapshots into a temporary table of
# its own session, each version its version query names, in order
$node->safe_psql('app', q{
	CREATE TABLE snapq (ver int, k int, v text);
	INSERT INTO snapq VALUES (1, 1, 'a'), (2, 1, 'b'), (2, 2, 'c');
	SELECT autocdc.create_snapshot_flow('snapq_t', keys => '{k}', stored_as_scd_type => '2',
		source_query => 'SELECT k, v FROM snapq WHERE ver = current_snapshot_version()',
		version_query => 'SELECT ver FROM snapq WHERE ver > coalesce(last_snapshot_version(), 0) ORDER BY ver LIMIT 1');
});
wait_for('app', q{SELECT count(*) = 3 AND count(*) FILTER (WHERE __end_at IS NULL) = 2 FROM snapq_t},
	'the worker applies a version query\'s versions');
$node->safe_psql('app', q{INSERT INTO snapq VALUES (3, 2, 'd')});
wait_for('app', q{SELECT string_agg(k || v, ',' ORDER BY k) = '2d' FROM snapq_t WHERE __end_at IS NULL},
	'and the next one on its own');

# --- run_flow and the worker on one flow ------------------------------------
# run_flow in a loop while events arrive: every event once, same result.
my $loop = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('app'), '-c', q{
		DO $$ BEGIN FOR i IN 1..60 LOOP
			PERFORM * FROM autocdc.run_flow('t1');
			COMMIT;
			PERFORM pg_sleep(0.02);
		END LOOP; END $$} ],
	'>', \my $loop_out, '2>', \my $loop_err);
for my $i (1 .. 20)
{
	insert_events('app', 'feed', 20);
}
$loop->finish;
is($loop_err, '', 'run_flow never fails beside the worker');
wait_for('app', q{SELECT bool_and(num_events = 850) FROM autocdc.flows WHERE name IN ('t1', 't2')},
	'every event applied exactly once with two appliers');
$node->safe_psql('app', q{SELECT * FROM autocdc.run_flow('r1'); SELECT * FROM autocdc.run_flow('r2')});
is(same_rows('app', 't1', 'r1'), 't', 'same result as a single applier (SCD 1)');
is(same_rows('app', 't2', 'r2'), 't', 'same result as a single applier (SCD 2)');

# --- a failing flow: error state, back-off, recovery after skip_events -----
$node->safe_psql('app', q{
	CREATE TABLE feed_e (k int, v text, seq int);
	SELECT autocdc.create_flow('e1', 'feed_e', '{k}', 'seq');
	INSERT INTO feed_e VALUES (1, 'a', 1);
});
wait_for('app', q{SELECT num_events = 1 FROM autocdc.flows WHERE name = 'e1'}, 'e1 runs');
my $before_bad = $node->safe_psql('app', 'SELECT pg_current_wal_lsn()');
$node->safe_psql('app', q{INSERT INTO feed_e VALUES (2, 'bad', NULL)});
my $bad = $node->safe_psql('app', 'SELECT pg_current_wal_lsn()');
wait_for('app', q{SELECT state = 'error' AND last_error LIKE '%null sequence%' FROM autocdc.flows WHERE name = 'e1'},
	'a poisoned event puts the flow in state error with its message');
# the whole error is kept: the commit to pass, the detail and hint naming it, the SQLSTATE
my $lsn = $node->safe_psql('app', q{SELECT last_error_lsn FROM autocdc.flows WHERE name = 'e1'});
is($node->safe_psql('app', qq{SELECT '$lsn'::pg_lsn > '$before_bad' AND '$lsn'::pg_lsn <= '$bad'}), 't',
	'last_error_lsn is the commit of the poisoned transaction');
is($node->safe_psql('app', q{SELECT last_error_sqlstate || ' | ' || last_error_detail || ' | ' || last_error_hint
							   FROM autocdc.flows WHERE name = 'e1'}),
	"22004 | The event's source transaction committed at LSN $lsn. | "
	  . "Pass it with SELECT autocdc.skip_events('e1', '$lsn'), or recreate the flow with a sequence that is never null.",
	'a worker run keeps the SQLSTATE, detail and hint of its error');
is($node->safe_psql('app', q{SELECT error_sqlstate || ' ' || error_lsn || ' ' || (error_hint LIKE '%skip_events%')
							   FROM autocdc.flow_runs WHERE flow = 'e1' AND status = 'error' ORDER BY id DESC LIMIT 1}),
	"22004 $lsn true", 'so does its flow_runs row');
like(slurp_file($node->logfile),
	qr/flow "e1" failed: [^\n]*null sequence\n[^\n]*DETAIL:  The event's source transaction committed at LSN \Q$lsn\E\.\n[^\n]*HINT:  Pass it with SELECT autocdc\.skip_events\('e1', '\Q$lsn\E'\)/,
	'the server log shows the LSN to pass and the skip_events hint');
is($node->safe_psql('app', q{SELECT retry_at > last_error_at FROM autocdc.flows WHERE name = 'e1'}),
	't', 'the failed flow is retried after a back-off');
is($node->safe_psql('app', q{SELECT count(*) > 0 FROM autocdc.flow_runs WHERE flow = 'e1' AND status = 'error'}),
	't', 'the failed run is logged');
insert_events('app', 'feed', 10);
wait_for('app', q{SELECT num_events = 860 FROM autocdc.flows WHERE name = 't1'},
	'the other flows go on');
$node->safe_psql('app', q{SELECT autocdc.skip_events('e1', last_error_lsn) FROM autocdc.flows WHERE name = 'e1'});
$node->safe_psql('app', q{INSERT INTO feed_e VALUES (3, 'c', 2)});
wait_for('app', q{SELECT state = 'idle' AND num_events = 2 AND num_skipped_events = 1
					FROM autocdc.flows WHERE name = 'e1'},
	'after skip_events the flow continues by itself');
is($node->safe_psql('app', 'SELECT string_agg(k::text, \',\' ORDER BY k) FROM e1'), '1,3',
	'the skipped event is not applied, the next one is');

# --- SIGKILL of the worker: crash restart, nothing lost or doubled ---------
my $ins = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('app'), '-c', q{
		DO $$ BEGIN FOR i IN 1..3000 LOOP
			INSERT INTO feed VALUES ((random() * 40)::int, md5(random()::text), (random() * 1000)::int,
									 CASE WHEN random() < 0.1 THEN 'D' ELSE 'U' END);
			COMMIT;
		END LOOP; END $$} ],
	'>', \my $ins_out, '2>', \my $ins_err);
$node->poll_query_until('app', 'SELECT count(*) > 1200 FROM feed');
my $w = workers('app');
ok($w ne '', 'a worker is applying while events arrive');
kill 'KILL', $w;
$ins->finish;	# the crash restart ends the inserting session too
wait_for_restart($node) or die 'the server did not come back';
wait_for('app', q{SELECT bool_and(f.num_events = (SELECT count(*) FROM feed))
					FROM autocdc.flows f WHERE f.name IN ('t1', 't2')},
	'after a crash every committed event is applied exactly once');
$node->safe_psql('app', q{SELECT * FROM autocdc.run_flow('r1'); SELECT * FROM autocdc.run_flow('r2')});
is(same_rows('app', 't1', 'r1'), 't', 'SCD 1 target is right after the crash');
is(same_rows('app', 't2', 'r2'), 't', 'SCD 2 target is right after the crash');

# --- SIGTERM of worker and launcher ------------------------------------------
$w = workers('app');
kill 'TERM', $w;
wait_for('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc worker'
						  AND datname = 'app' AND pid <> $w AND application_name <> 'autocdc laggard worker'},
	'a terminated worker is replaced');
$w = workers('app');
my $l = launcher();
kill 'TERM', $l;
wait_for('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc launcher'
						  AND pid <> $l},
	'a terminated launcher is restarted');
sleep 2;
is(workers('app'), $w, 'a restarted launcher does not start a second worker');
insert_events('app', 'feed', 10);
wait_for('app', q{SELECT bool_and(f.num_events = (SELECT count(*) FROM feed))
					FROM autocdc.flows f WHERE f.name IN ('t1', 't2')},
	'and the worker goes on applying');

# --- server restart ------------------------------------------------------------
$node->restart;
insert_events('app', 'feed', 10);
wait_for('app', q{SELECT bool_and(f.num_events = (SELECT count(*) FROM feed))
					FROM autocdc.flows f WHERE f.name IN ('t1', 't2')},
	'after a restart the worker applies again');

# --- database DDL while the worker runs --------------------------------------
my $tsdir = $node->basedir . '/ts';
mkdir $tsdir;
$node->safe_psql('postgres', qq{
	CREATE ROLE dbowner LOGIN CREATEDB;
	CREATE TABLESPACE ts LOCATION '$tsdir';
	GRANT CREATE ON TABLESPACE ts TO dbowner;
	CREATE DATABASE app3 OWNER dbowner;
});
$node->safe_psql('app3', $flows_sql);
$node->safe_psql('app3', 'SELECT * FROM autocdc.run_flow(\'r1\')');
insert_events('app3', 'feed', 20);
wait_for('app3', q{SELECT num_events = 20 FROM autocdc.flows WHERE name = 't1'}, 'app3 has a working worker');

my ($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app3 RENAME TO app',
	extra_params => [ '-U', 'dbowner' ]);
isnt($ret, 0, 'a failing RENAME fails as it would without autocdc');
wait_for('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname = 'app3'},
	'and the worker comes back');

($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app3 RENAME TO app4',
	extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'the database owner renames the database while its worker runs') or diag($err);
wait_for('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname = 'app4'},
	'the worker comes back in the renamed database');

($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE app4 SET TABLESPACE ts',
	extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'ALTER DATABASE SET TABLESPACE works while the worker runs') or diag($err);
wait_for('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname = 'app4'},
	'the worker comes back after the move');
# PostgreSQL cannot decode WAL written before the move: the flows say so
wait_for('app4', q{SELECT bool_and(state = 'needs_resync') FROM autocdc.flows WHERE name IN ('t1', 't2')},
	'after SET TABLESPACE the flows need a resync instead of failing');
$node->safe_psql('app4', q{SELECT * FROM autocdc.full_refresh('t1')});
$node->safe_psql('app4', q{SELECT * FROM autocdc.full_refresh('t2')});
is($node->safe_psql('app4', q{SELECT string_agg(state, ',') FROM autocdc.flows WHERE name IN ('t1', 't2')}),
	'idle,idle', 'full_refresh brings them back');

($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE app5 TEMPLATE app4',
	extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'CREATE DATABASE ... TEMPLATE works while the template\'s worker runs') or diag($err);
wait_for('postgres', q{SELECT count(*) = 2 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname IN ('app4', 'app5')},
	'both databases have their worker');
is($node->safe_psql('app5', q{SELECT state FROM autocdc.flows WHERE name = 't1'}),
	'needs_resync', 'a copied flow needs a resync (its progress belongs to another slot)');
my $n4 = $node->safe_psql('app4', q{SELECT num_events FROM autocdc.flows WHERE name = 't1'});
insert_events('app4', 'feed', 5);
wait_for('app4', qq{SELECT num_events = $n4 + 5 FROM autocdc.flows WHERE name = 't1'},
	'the template database goes on applying');

($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE app4', extra_params => [ '-U', 'dbowner' ]);
is($ret, 0, 'the owner drops a database while its worker runs') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_replication_slots WHERE database = 'app4'}),
	'0', 'no slot of the dropped database is left');
$node->safe_psql('postgres', 'DROP DATABASE app5');

# --- drop_flow and DROP EXTENSION leave nothing behind ---------------------
$node->safe_psql('app', q{
	SELECT autocdc.drop_flow(name, true) FROM autocdc.flows WHERE kind = 'cdc';
});
wait_for('postgres', q{SELECT count(*) = 0 FROM pg_replication_slots WHERE database = 'app'},
	'once no flow needs it, the worker drops the slot');
$node->safe_psql('app', q{
	SELECT autocdc.create_flow('t9', 'feed', '{k}', 'seq');
});
insert_events('app', 'feed', 5);
wait_for('app', q{SELECT num_events > 0 FROM autocdc.flows WHERE name = 't9'},
	'a new flow gets a new slot from the worker');
$node->safe_psql('app', 'DROP EXTENSION autocdc CASCADE');
wait_for('postgres', q{SELECT count(*) = 0 FROM pg_replication_slots WHERE database = 'app'},
	'after DROP EXTENSION the worker drops the slot');
wait_for('postgres', q{SELECT count(*) = 0 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname = 'app'},
	'and exits');
sleep 2;
is(workers('app'), '', 'a worker whose extension was dropped is not restarted');
is($node->safe_psql('app', q{SELECT count(*) FROM pg_publication}), '0', 'no publication is left');
$node->safe_psql('app', 'CREATE EXTENSION autocdc');
wait_for('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
						WHERE backend_type = 'autocdc worker' AND datname = 'app'},
	'CREATE EXTENSION again brings the worker back');

# --- a quiet server log ------------------------------------------------------
# PostgreSQL logs two lines at every start of logical decoding; the worker
# decodes at every commit.  Over twenty commits the log must not show them
# for autocdc's decoding, at the default log_min_messages (warning) or any
# other, while it still shows them for someone else's decoding.
$node->safe_psql('app', q{
	CREATE TABLE busy (n int);
	SELECT autocdc.create_flow('quiet', 'feed', '{k}', 'seq');
});
insert_events('app', 'feed', 5);
wait_for('app', q{SELECT num_events > 0 FROM autocdc.flows WHERE name = 'quiet'},
	'log noise: the flow is applied');
my $decoding_lines = qr/starting logical decoding for slot "autocdc|logical decoding found consistent point/;
for my $level ('', 'info')
{
	if ($level)
	{
		$node->append_conf('postgresql.conf', "log_min_messages = $level");
		$node->reload;
		sleep 1;
	}
	my $txns = $node->safe_psql('app', q{
		SELECT coalesce(sum(total_txns), 0) FROM pg_stat_replication_slots WHERE slot_name LIKE 'autocdc\_%'});
	my $offset = -s $node->logfile;
	for my $i (1 .. 20)
	{
		$node->safe_psql('app', "INSERT INTO busy VALUES ($i)");
		select(undef, undef, undef, 0.25);
	}
	my $level_name = $level || 'the default';
	ok( $node->poll_query_until('app', qq{
			SELECT coalesce(sum(total_txns), 0) >= $txns + 10
			  FROM pg_stat_replication_slots WHERE slot_name LIKE 'autocdc\\_%'}),
		"log noise, log_min_messages $level_name: the worker decoded the commits");
	my @lines = grep { /$decoding_lines/ } split /\n/, slurp_file($node->logfile, $offset);
	is(scalar(@lines), 0, "log noise, log_min_messages $level_name: no decoding lines of autocdc's in the log");
}
# (19 logs these lines at DEBUG1, 15 to 18 at LOG: debug1 shows them on every version)
$node->safe_psql('app', q{SELECT pg_create_logical_replication_slot('other', 'test_decoding')});
$node->append_conf('postgresql.conf', "log_min_messages = debug1");
$node->reload;
sleep 1;
my $offset = -s $node->logfile;
$node->safe_psql('app', q{SELECT count(*) FROM pg_logical_slot_get_changes('other', NULL, NULL)});
like(slurp_file($node->logfile, $offset), qr/starting logical decoding for slot "other"/,
	'log noise: decoding by someone else is still logged');
$node->append_conf('postgresql.conf', "log_min_messages = warning");
$node->reload;
$node->safe_psql('app', q{SELECT pg_drop_replication_slot('other')});

# --- lag_time: NULL when nothing is pending, else the age of what is --------
$node->safe_psql('postgres', q{ALTER SYSTEM SET autocdc.naptime = '1s'});
$node->reload;
sub lag
{
	my ($flow) = @_;
	return $node->safe_psql('app', qq{
		SELECT coalesce(round(extract(epoch FROM lag_time), 1)::text, 'null') || ' '
			   || coalesce(lag_time_exact::text, 'null')
		  FROM autocdc.flows WHERE name = '$flow'});
}
$node->safe_psql('app', q{
	CREATE TABLE feed_l (k int, v text, seq int);
	SELECT autocdc.create_flow('l1', 'feed_l', '{k}', 'seq');
	INSERT INTO feed_l VALUES (1, 'a', 1);
});
wait_for('app', q{SELECT num_events = 1 AND lag_time IS NULL AND lag_time_exact FROM autocdc.flows WHERE name = 'l1'},
	'lag_time: a caught-up flow shows none');
my @lags;
for my $i (1 .. 20)
{
	$node->safe_psql('app', "INSERT INTO busy VALUES ($i)");
	push @lags, lag('l1');
	select(undef, undef, undef, 0.2);
}
is(join(',', grep { $_ ne 'null true' } @lags), '', 'lag_time: an idle flow shows none while other tables change');

# seen and not applied: the age of that commit, exactly
my $t0 = $node->safe_psql('app', 'SELECT clock_timestamp()');
$node->safe_psql('app', q{INSERT INTO feed_l VALUES (2, 'bad', NULL)});
my $t1 = $node->safe_psql('app', 'SELECT clock_timestamp()');
wait_for('app', q{SELECT state = 'error' AND lag_time_exact FROM autocdc.flows WHERE name = 'l1'},
	'lag_time: a failing flow has a pending commit');
sleep 1;
is($node->safe_psql('app', qq{
		SELECT lag_time BETWEEN now() - '$t1'::timestamptz AND now() - '$t0'::timestamptz
		  FROM autocdc.flows WHERE name = 'l1'}),
	't', 'lag_time: the age of the oldest commit seen and not applied');
$node->safe_psql('app', q{SELECT autocdc.skip_events('l1', last_error_lsn) FROM autocdc.flows WHERE name = 'l1'});
wait_for('app', q{SELECT state = 'idle' AND lag_time IS NULL AND lag_time_exact FROM autocdc.flows WHERE name = 'l1'},
	'lag_time: none once the flow caught up again');

# a paused flow: none while nothing is committed to its source, an estimate after
$node->safe_psql('app', q{SELECT autocdc.pause_flow('l1')});
sleep 2;
is(lag('l1'), 'null true', 'lag_time: a paused flow with nothing pending shows none');
$node->safe_psql('app', q{INSERT INTO feed_l VALUES (3, 'c', 3)});
wait_for('app', q{SELECT lag_time IS NOT NULL AND NOT lag_time_exact FROM autocdc.flows WHERE name = 'l1'},
	'lag_time: a paused flow with a commit pending shows an estimate');
my $first = $node->safe_psql('app', q{SELECT extract(epoch FROM lag_time) FROM autocdc.flows WHERE name = 'l1'});
sleep 1;
ok($node->safe_psql('app', q{SELECT extract(epoch FROM lag_time) FROM autocdc.flows WHERE name = 'l1'}) > $first,
	'lag_time: the estimate grows while the flow is paused');
$node->safe_psql('app', q{SELECT autocdc.resume_flow('l1')});
wait_for('app', q{SELECT num_events = 2 AND lag_time IS NULL AND lag_time_exact FROM autocdc.flows WHERE name = 'l1'},
	'lag_time: none once the resumed flow applied its events');

# a flow that only run_flow applies
$node->safe_psql('app', q{
	CREATE TABLE feed_l2 (k int, v text, seq int);
	SELECT autocdc.create_flow('l2', 'feed_l2', '{k}', 'seq', continuous => false);
	INSERT INTO feed_l2 VALUES (1, 'a', 1);
	SELECT * FROM autocdc.run_flow('l2');
});
is(lag('l2'), 'null true', 'lag_time: none after run_flow applied everything');
$node->safe_psql('app', q{INSERT INTO feed_l2 VALUES (2, 'b', 2)});
like(lag('l2'), qr/^[0-9.]+ false$/, 'lag_time: an estimate once its source has a commit no run applied');
$node->safe_psql('app', q{SELECT * FROM autocdc.run_flow('l2')});
is(lag('l2'), 'null true', 'lag_time: none again after the next run_flow');
$node->safe_psql('app', q{BEGIN; INSERT INTO feed_l2 VALUES (3, 'c', 3); SELECT * FROM autocdc.run_flow('l2'); COMMIT;});
like(lag('l2'), qr/^[0-9.]+ false$/,
	'lag_time: an estimate after a run in the transaction that inserted (which that run cannot apply)');
$node->safe_psql('app', q{SELECT * FROM autocdc.run_flow('l2')});
is(lag('l2'), 'null true', 'lag_time: none once a later run applied it');

$node->stop;
done_testing();
