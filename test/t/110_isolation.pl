
# Isolation between flows (docs/operations.md "Lanes and slots"): one owner's slow,
# blocked or lagging flow does not delay another owner's flow.
#
# alice and bob (no superusers) each own a continuous flow.  alice's
# commit-to-visible latency (measured in the server: insert, commit, then
# poll her target every 10 ms) stays under 1 s while
#   1. bob's apply_as_deletes expression sleeps 15 s on one event (his event
#      is applied in the end, by the laggard worker);
#   2. bob holds ACCESS EXCLUSIVE on his feed, then on his target, in an open
#      transaction (his flow shows 'waiting', and catches up afterwards);
#   3. an ALTER TABLE on bob's feed waits behind his open transaction;
#      bob's flow applies a 2M-row transaction (which completes), and bob
#      inserts 2M rows into a table no flow reads, and in another database
#      (the main slot's restart point moves past each while it runs);
#      bob creates a flow over a table of 300k rows, whose first read takes
#      longer than a slice (the laggard worker applies it);
# and with WAL behind a paused flow of bob's,
#   4. the paused flow moves to the laggard slot, the main slot's restart
#      point moves on, autocdc.flows names the flow that holds WAL back, and
#      a one-row run of alice's flow costs at most twice its baseline within
#      two passes; resumed, bob's flow applies every event exactly once and
#      returns to the main slot;
#   5. killing the worker between a slot copy and the commit of the moves
#      loses and doubles nothing;
#   6. with autocdc.max_lag_age, a flow served from the laggard slot longer
#      than that needs a resync and pins nothing; full_refresh brings it back.
# A sampler session counts the database's slots every 20 ms: never more
# than three, two at rest.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use AutocdcTest;

my $slice_ms = 400;
my $node = autocdc_node('isolation', worker => 1,
	conf => [ "autocdc.flow_time_slice = ${slice_ms}ms", 'autocdc.naptime = 200ms',
		'autocdc.max_lag = 16MB', 'max_wal_size = 2GB', 'restart_after_crash = on' ]);

sub sql
{
	my ($sql, %opt) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, on_error_stop => 1,
		timeout => $opt{timeout} // 300);
	return $rc == 0 ? $out : "ERROR: $err";
}

sub as
{
	my ($role, $sql, %opt) = @_;
	return sql("SET ROLE $role;\n$sql", %opt);
}

sql(q{
	CREATE EXTENSION autocdc;
	CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN;
	CREATE SCHEMA alice AUTHORIZATION alice; CREATE SCHEMA bob AUTHORIZATION bob;
	CREATE TABLE slot_samples (at timestamptz DEFAULT clock_timestamp(), n int);
	GRANT ALL ON slot_samples TO PUBLIC;
});
is(as('alice', q{
	CREATE TABLE alice.feed (id int, v text, seq bigserial);
	SELECT autocdc.create_flow(target => 'alice.tgt', source => 'alice.feed', keys => '{id}',
		sequence_by => 'seq', name => 'alice_flow');}), 'alice_flow', 'alice creates her flow');
is(as('bob', q{
	CREATE TABLE bob.feed (id int, v text, seq bigserial);
	CREATE FUNCTION bob.slow(v text) RETURNS boolean LANGUAGE plpgsql AS
	  $$BEGIN IF v = 'sleep' THEN PERFORM pg_sleep(15); END IF; RETURN false; END$$;
	SELECT autocdc.create_flow(target => 'bob.tgt', source => 'bob.feed', keys => '{id}',
		sequence_by => 'seq', name => 'bob_flow', apply_as_deletes => 'bob.slow(v)');}),
	'bob_flow', 'bob creates his flow');

# the slot sampler: a background session committing a count every 20 ms
my $sampler = $node->background_psql('postgres', on_error_stop => 0);
$sampler->query_until(qr/sampling/, q{
	\echo sampling
	DO $$BEGIN
	  LOOP
	    INSERT INTO slot_samples (n) SELECT count(*) FROM pg_replication_slots
	     WHERE slot_name LIKE 'autocdc\_%' AND database = current_database();
	    COMMIT;
	    PERFORM pg_sleep(0.02);
	  END LOOP;
	END$$;
});

my $next_id = 1000;

# alice's latency of one insert, in seconds (measured in the server)
sub alice_latency
{
	my $id = $next_id++;
	my $out = sql(qq{
		SET ROLE alice;
		CREATE TEMP TABLE IF NOT EXISTS lat (s float8);
		TRUNCATE lat;
		DO \$\$DECLARE t0 timestamptz;
		BEGIN
		  INSERT INTO alice.feed (id, v) VALUES ($id, 'x');
		  COMMIT;
		  t0 := clock_timestamp();
		  LOOP
		    EXIT WHEN EXISTS (SELECT FROM alice.tgt WHERE id = $id);
		    IF clock_timestamp() - t0 > interval '60 s' THEN RAISE 'not visible after 60 s'; END IF;
		    PERFORM pg_sleep(0.01);
		  END LOOP;
		  INSERT INTO lat VALUES (extract(epoch FROM clock_timestamp() - t0));
		END\$\$;
		SELECT round(s::numeric, 3) FROM lat;});
	return $out =~ /^[\d.]+$/ ? $out : 999;
}

# the worst of n latencies, one every 0.3 s
sub worst_latency
{
	my ($n) = @_;
	my $worst = 0;
	my @all;
	for (1 .. $n)
	{
		my $l = alice_latency();
		push @all, $l;
		$worst = $l if $l > $worst;
		select(undef, undef, undef, 0.3);
	}
	note 'latencies: ' . join(' ', @all);
	return $worst;
}

sub flow_col
{
	my ($flow, $col) = @_;
	return sql("SELECT $col FROM autocdc.flows WHERE name = '$flow'");
}

sub wait_for
{
	my ($query, $name) = @_;
	ok($node->poll_query_until('postgres', $query), $name);
}

my $base = worst_latency(5);
cmp_ok($base, '<', 1, "baseline: alice's latency is under 1 s (worst $base s)");

# 1. bob's expression sleeps 15 s
as('bob', q{INSERT INTO bob.feed (id, v) VALUES (1, 'sleep')});
my $t0 = time;
my $worst = worst_latency(12);
cmp_ok($worst, '<', 1, "1: alice's latency stays under 1 s while bob's expression sleeps (worst $worst s)");
is(flow_col('bob_flow', 'lane'), 'laggard', '1: bob\'s slow flow is applied in the laggard lane');
wait_for(q{SELECT count(*) = 1 FROM bob.tgt WHERE id = 1}, '1: bob\'s slow event is applied in the end');
my $took = time - $t0;
cmp_ok($took, '>=', 14, "1: it took its 15 s ($took s), applied without a time limit");
is(flow_col('bob_flow', "coalesce(last_error, 'none')"), 'none', '1: the slow flow recorded no error');
is(sql(q{SELECT count(*) FROM autocdc.flow_runs WHERE flow = 'bob_flow' AND status = 'error'}), '0',
	'1: no failed run is logged for the rolled-back slice');

# 2. bob locks his feed, then his target, in an open transaction
for my $what ('feed', 'tgt')
{
	my $lock = $node->background_psql('postgres', on_error_stop => 0);
	$lock->query_safe("SET ROLE bob; BEGIN; LOCK TABLE bob.$what IN ACCESS EXCLUSIVE MODE;");
	as('bob', q{INSERT INTO bob.feed (id, v) VALUES (2, 'x')}) if $what eq 'tgt';
	$worst = worst_latency(6);
	cmp_ok($worst, '<', 1, "2: alice's latency stays under 1 s while bob holds ACCESS EXCLUSIVE on his $what (worst $worst s)");
	if ($what eq 'tgt')
	{
		is(flow_col('bob_flow', 'state'), 'waiting', '2: bob\'s flow shows waiting');
		cmp_ok(flow_col('bob_flow', 'waiting_since IS NOT NULL'), 'eq', 't', '2: with waiting_since');
	}
	$lock->query_safe('COMMIT');
	$lock->quit;
}
wait_for(q{SELECT count(*) = 1 FROM bob.tgt WHERE id = 2}, '2: bob\'s flow catches up once the locks are gone');
wait_for(q{SELECT state = 'idle' FROM autocdc.flows WHERE name = 'bob_flow'}, '2: and is idle again');

# 3. an ALTER TABLE on bob's feed waits behind his open transaction
{
	my $reader = $node->background_psql('postgres', on_error_stop => 0);
	$reader->query_safe('SET ROLE bob; BEGIN; SELECT count(*) FROM bob.feed;');
	my $alter = $node->background_psql('postgres', on_error_stop => 0);
	$alter->query_until(qr/altering/, q{
		SET ROLE bob;
		\echo altering
		ALTER TABLE bob.feed ADD COLUMN extra int;
	});
	wait_for(q{SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock'
		AND query LIKE 'ALTER TABLE bob.feed%'}, '3: the ALTER TABLE waits');
	$worst = worst_latency(6);
	cmp_ok($worst, '<', 1, "3: alice's latency stays under 1 s while an ALTER TABLE on bob's feed waits (worst $worst s)");
	$reader->query_safe('COMMIT');
	$reader->quit;
	$alter->quit;
}

# 3b. big transactions while they are being written: bob's flow applies a
# 2M-row transaction (in the laggard lane), which completes; then 2M-row
# inserts into a table no flow reads, and into another database.  Each insert
# sleeps 8 s at its last row, so that the transaction stays open, its rows
# written, long enough for five samples however fast the machine.  Each
# pass decodes from the main slot's restart point.  For a table no flow
# reads that point moves past the transaction while it is still running (a
# transaction whose records are decoded, or merely make it known to
# decoding — its serial column's sequence records — would hold the restart
# point at its start).  A transaction on a table some flow reads holds it,
# whichever slot serves that flow now: the flow may come back to the main
# slot before the transaction ends (section 7).  Then every main pass reads
# all of it again, without decoding it: alice's latency grows with its size
# (about 0.8 s at 2M rows here), and is bounded by 2 s in that case; by 1 s
# in the others.
sub during_big_insert
{
	my ($label, $db, $insert, $moves) = @_;
	my $bound = $moves ? 1 : 2;
	my $before = sql('SELECT pg_current_wal_lsn()');
	my $big = $node->background_psql($db, on_error_stop => 0);
	$big->query_until(qr/inserting/, "SET ROLE bob;\n\\echo inserting\n$insert;\n");
	ok($node->poll_query_until('postgres', qq{
			SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$before') > 20 * 1024 * 1024}),
		"$label: the insert has written 20 MB of WAL");
	my $mid = sql('SELECT pg_current_wal_lsn()');
	my ($worst, $passed, @all) = (0, 0);
	for (1 .. 200)
	{
		# one reading: whether the insert still runs, and whether the main
		# slot's restart point has passed $mid
		my $state = sql(qq{
			SELECT (SELECT count(*) > 0 FROM pg_stat_activity
			         WHERE backend_xid IS NOT NULL AND query LIKE 'INSERT INTO bob.%'),
			       (SELECT bool_or(s.restart_lsn > '$mid') FROM pg_replication_slots s
			          JOIN autocdc_internal._slots() l USING (slot_name) WHERE NOT l.laggard)});
		last if $state !~ /^t\|/;
		$passed = 1 if $state eq 't|t';
		my $l = alice_latency();
		push @all, $l;
		$worst = $l if $l > $worst;
		select(undef, undef, undef, 0.2);
	}
	note "$label latencies: " . join(' ', @all);
	cmp_ok(scalar(@all), '>=', 5, "$label: alice's latency sampled while the insert runs");
	cmp_ok($worst, '<', $bound, "$label: alice's latency stays under $bound s (worst $worst s)");
	if ($moves)
	{
		ok($passed, "$label: the main slot's restart point moves past the running transaction");
	}
	else
	{
		ok(!$passed, "$label: the main slot's restart point stays at the running transaction");
	}
	$big->quit;
}

during_big_insert('3b', 'postgres',
	q{INSERT INTO bob.feed (id, v) SELECT g, CASE WHEN g = 3000000 AND pg_sleep(8) IS NOT NULL THEN 'big' ELSE 'big' END
	  FROM generate_series(1000001, 3000000) g}, 0);
wait_for(q{SELECT count(*) = 2000000 FROM bob.tgt WHERE v = 'big'}, '3b: bob\'s 2M-row transaction is applied');
is(flow_col('bob_flow', "coalesce(last_error, 'none')"), 'none', '3b: without an error');
# the main slot's restart point moves on once the transaction has ended
my $after_big = sql('SELECT pg_current_wal_lsn()');
wait_for(qq{SELECT bool_and(s.restart_lsn > '$after_big') FROM pg_replication_slots s
	JOIN autocdc_internal._slots() l USING (slot_name) WHERE NOT l.laggard},
	'3b: the main slot\'s restart point moves past the transaction once it has ended');
as('bob', q{CREATE TABLE bob.plain_big (id bigserial, v text)});
during_big_insert('3b, a table no flow reads', 'postgres',
	q{INSERT INTO bob.plain_big (v) SELECT CASE WHEN g = 2000000 AND pg_sleep(8) IS NOT NULL THEN 'big' ELSE 'big' END
	  FROM generate_series(1, 2000000) g}, 1);
as('bob', q{DROP TABLE bob.plain_big});
sql(q{CREATE DATABASE elsewhere});
$node->safe_psql('elsewhere', q{
	CREATE SCHEMA bob AUTHORIZATION bob;
	SET ROLE bob; CREATE TABLE bob.plain_big (id bigserial, v text);});
during_big_insert('3b, another database', 'elsewhere',
	q{INSERT INTO bob.plain_big (v) SELECT CASE WHEN g = 2000000 AND pg_sleep(8) IS NOT NULL THEN 'big' ELSE 'big' END
	  FROM generate_series(1, 2000000) g}, 1);
sql(q{DROP DATABASE elsewhere});

# 3c. a first read longer than a slice: cut in the main lane, it must be
# applied apart (a flow without progress used to stay in the main lane,
# its first read cut at every pass)
{
	as('bob', q{
		CREATE TABLE bob.big (id int, v text, seq bigint);
		INSERT INTO bob.big SELECT g, md5(g::text), g FROM generate_series(1, 300000) g;});
	# the worker decodes that transaction (3b: a cost of its own) before
	sleep(3);
	as('bob', q{SELECT autocdc.create_flow(target => 'bob.big_tgt', source => 'bob.big', keys => '{id}',
			sequence_by => 'seq', name => 'bob_big');});
	$worst = worst_latency(8);
	cmp_ok($worst, '<', 1, "3c: alice's latency stays under 1 s while bob's flow reads its table first (worst $worst s)");
	wait_for(q{SELECT count(*) = 300000 FROM bob.big_tgt}, '3c: bob\'s first read is applied');
	is(flow_col('bob_big', "lane || ' ' || coalesce(last_error, 'none')"), 'laggard none',
		'3c: by the laggard worker, without an error');
	as('bob', q{SELECT autocdc.drop_flow('bob_big'); DROP TABLE bob.big});
}

# 4. WAL behind a paused flow of bob's
as('bob', q{INSERT INTO bob.feed (id, v) VALUES (3, 'x')});
wait_for(q{SELECT count(*) = 1 FROM bob.tgt WHERE id = 3}, '4: bob is up to date');

# a one-row run of alice's flow: median of 7, in ms, once the main slot's
# restart point is within 4 MB of the end of the WAL (it moves at
# running-transactions records, so a run re-reads up to that much anyway)
sub one_row_run
{
	my @t;
	ok($node->poll_query_until('postgres', q{
			SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn) < 4 * 1024 * 1024
			  FROM pg_replication_slots s JOIN autocdc_internal._slots() l USING (slot_name)
			 WHERE NOT l.laggard}), 'the main slot re-reads less than 4 MB');
	for (1 .. 7)
	{
		my $id = $next_id++;
		my $ms = sql(qq{
			SET ROLE alice;
			INSERT INTO alice.feed (id, v) VALUES ($id, 'r');
			SELECT round(extract(epoch FROM clock_timestamp()) * 1000) AS t0 \\gset
			SELECT num_events >= 0 FROM autocdc.run_flow('alice_flow') \\g /dev/null
			SELECT round(extract(epoch FROM clock_timestamp()) * 1000) - :t0;});
		push @t, $ms;
	}
	@t = sort { $a <=> $b } @t;
	note 'one-row runs (ms): ' . join(' ', @t);
	return $t[3];
}
my $baseline = one_row_run();
as('bob', q{SELECT autocdc.pause_flow('bob_flow')});
my $events = 200000;
as('bob', qq{INSERT INTO bob.feed (id, v) SELECT g, repeat('y', 1000) FROM generate_series(10, $events + 9) g});
sql(q{CREATE TABLE ballast AS SELECT g, repeat('z', 1000) AS z FROM generate_series(1, 200000) g});
my $pinned = sql(q{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), progress) FROM autocdc.flow_state WHERE name = 'bob_flow'});
cmp_ok($pinned, '>', 300 * 1024 * 1024, "4: $pinned bytes of WAL since the paused flow's progress");
wait_for(q{SELECT lane = 'laggard' FROM autocdc.flows WHERE name = 'bob_flow'}, '4: the paused flow is on the laggard slot');
wait_for(q{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn) < 64 * 1024 * 1024
	FROM pg_replication_slots s JOIN autocdc_internal._slots() l USING (slot_name) WHERE NOT l.laggard},
	"4: the main slot's restart point moves on");
# alice's flow is up to date: it holds nothing back (once its last insert is counted)
wait_for(q{SELECT string_agg(name || ':' || lane || ':' || holds_wal_back, ',' ORDER BY name)
		= 'alice_flow:main:false,bob_flow:laggard:true' FROM autocdc.flows},
	'4: autocdc.flows shows the lanes and who holds WAL back');
cmp_ok(flow_col('bob_flow', 'retained_wal_bytes'), '>', 300 * 1024 * 1024, '4: bob\'s flow retains the WAL');
cmp_ok(flow_col('alice_flow', 'retained_wal_bytes'), '<', 64 * 1024 * 1024, '4: alice\'s does not');
my $after = one_row_run();
cmp_ok($after, '<=', 2 * $baseline + 5,
	"4: a one-row run of the up-to-date flow costs at most twice its baseline ($after vs $baseline ms)");

as('bob', q{SELECT autocdc.resume_flow('bob_flow')});
wait_for(qq{SELECT count(*) = $events + 3 + 2000000 FROM bob.tgt}, '4: resumed, bob\'s flow applies its backlog');
is(sql(q{SELECT count(*) FROM bob.tgt WHERE id >= 10 AND v = repeat('y', 1000)}), $events,
	'4: every event once');
is(flow_col('bob_flow', 'num_events'), $events + 3 + 2000000, '4: and counts each event once');
wait_for(q{SELECT bool_and(lane = 'main') FROM autocdc.flows}, '4: bob\'s flow returns to the main slot');
wait_for(q{SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'autocdc\_%'},
	'4: and the laggard slot is dropped');

# 5. pausing alice's flow needs a new laggard slot: kill the worker between
# the copy and the commit of the move
$node->append_conf('postgresql.conf', 'autocdc.test_pause_after_copy = 5000');
$node->reload;
sleep 2;	# the worker reloads its configuration between passes
my $log_offset = -s $node->logfile;
as('alice', q{SELECT autocdc.pause_flow('alice_flow')});
$node->wait_for_log(qr/autocdc: copied the main slot/, $log_offset);
wait_for(q{SELECT count(*) = 2 FROM autocdc_internal._slots()}, '5: the worker copied the main slot');
is(flow_col('alice_flow', 'lane'), 'main', '5: the move is not committed yet');
# the main worker (the laggard worker has an application_name of its own)
my $pid = sql(q{SELECT string_agg(pid::text, ',') FROM pg_stat_activity
	WHERE backend_type = 'autocdc worker' AND datname = 'postgres'
	  AND application_name <> 'autocdc laggard worker'});
note "main worker: $pid; activity: "
  . sql(q{SELECT string_agg(pid || ' ' || application_name || ' ' || query, '; ') FROM pg_stat_activity
	WHERE backend_type = 'autocdc worker'});
like($pid, qr/^\d+$/, '5: one main worker');
$node->append_conf('postgresql.conf', 'autocdc.test_pause_after_copy = 0');
$node->reload;
ok(kill('KILL', $pid), "5: SIGKILL of the worker ($pid) before its commit");
wait_for_restart($node) or die 'the server did not come back';
as('alice', qq{INSERT INTO alice.feed (id, v) SELECT g, 'paused' FROM generate_series(100000, 100999) g});
wait_for(q{SELECT lane = 'laggard' FROM autocdc.flows WHERE name = 'alice_flow'},
	'5: after the crash, the paused flow moves to a laggard slot');
wait_for(q{SELECT count(*) = 2 FROM pg_replication_slots WHERE slot_name LIKE 'autocdc\_%'},
	'5: the copy that served nobody is dropped');
as('alice', q{SELECT autocdc.resume_flow('alice_flow')});
wait_for(q{SELECT count(*) = 1000 FROM alice.tgt WHERE v = 'paused'}, '5: resumed, alice\'s flow applies its backlog');
wait_for(q{SELECT bool_and(lane = 'main') FROM autocdc.flows}, '5: both flows are on the main slot');
wait_for(q{SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'autocdc\_%'},
	'5: and the laggard slot is dropped');
my $id = $next_id++;
as('alice', qq{INSERT INTO alice.feed (id, v) VALUES ($id, 'end')});
wait_for(qq{SELECT count(*) = 1 FROM alice.tgt WHERE id = $id}, '5: alice\'s flow still applies');
is(sql(q{SELECT count(*) FROM alice.tgt}), sql(q{SELECT count(DISTINCT id) FROM alice.feed}),
	'5: alice\'s target has every key of her feed once');
is(flow_col('alice_flow', 'num_events'), sql(q{SELECT count(*) FROM alice.feed}),
	'5: and her flow counted each event once');
$sampler = undef;

# 6. autocdc.max_lag_age
$node->append_conf('postgresql.conf', 'autocdc.max_lag_age = 3s');
$node->reload;
$log_offset = -s $node->logfile;
as('alice', q{SELECT autocdc.pause_flow('alice_flow')});
$id = $next_id++;
as('alice', qq{INSERT INTO alice.feed (id, v) VALUES ($id, 'late')});
wait_for(q{SELECT lane = 'laggard' AND laggard_since IS NOT NULL FROM autocdc.flows WHERE name = 'alice_flow'},
	'6: the paused flow is on the laggard slot, since a time shown');
$node->wait_for_log(qr/flow "alice_flow" was served from the laggard slot longer than autocdc.max_lag_age; it needs a resync/,
	$log_offset);
ok(1, '6: after autocdc.max_lag_age the worker says it needs a resync');
wait_for(q{SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'autocdc\_%'},
	'6: and its laggard slot is dropped');
as('alice', q{SELECT autocdc.resume_flow('alice_flow')});
is(flow_col('alice_flow', "state || ' ' || coalesce(lane, 'none')"), 'needs_resync none',
	'6: resumed, the flow needs a resync and pins nothing');
as('alice', q{SELECT autocdc.full_refresh('alice_flow')});
wait_for(q{SELECT state = 'idle' FROM autocdc.flows WHERE name = 'alice_flow'}, '6: full_refresh brings it back');
is(sql(qq{SELECT count(*) FROM alice.tgt WHERE id = $id}), '1', '6: with the change it had not applied');
$node->append_conf('postgresql.conf', 'autocdc.max_lag_age = 0');
$node->reload;

# 7. a transaction still running while its flow changes slots: alice's
# flow moves to the laggard slot and back while one of her transactions is
# open.  The main slot goes on meanwhile (bob's flow, checkpoints: its
# restart point could move), but it must keep that transaction from its
# first change, or the flow, back on it, would get only the rest.
{
	my $open = $node->background_psql('postgres', on_error_stop => 0);
	my $start = sql('SELECT pg_current_wal_lsn()');
	$open->query_safe(q{SET ROLE alice; BEGIN;
		INSERT INTO alice.feed (id, v) SELECT g, 'open' FROM generate_series(500000, 500999) g;});
	as('alice', q{SELECT autocdc.pause_flow('alice_flow')});
	wait_for(q{SELECT lane = 'laggard' FROM autocdc.flows WHERE name = 'alice_flow'},
		'7: paused, alice\'s flow moves to the laggard slot');
	for my $i (1 .. 16)
	{
		my $bid = $next_id++;
		as('bob', qq{INSERT INTO bob.feed (id, v) VALUES ($bid, 'on')});
		sql('CHECKPOINT') if $i % 4 == 0;
		sleep(0.5);
	}
	my $bid = $next_id - 1;
	wait_for(qq{SELECT count(*) = 1 FROM bob.tgt WHERE id = $bid}, '7: bob\'s flow goes on meanwhile');
	is(sql(qq{SELECT bool_and(s.restart_lsn <= '$start') FROM pg_replication_slots s
			JOIN autocdc_internal._slots() l USING (slot_name) WHERE NOT l.laggard}),
		't', '7: the main slot\'s restart point stays before the open transaction of a flow it does not serve');
	as('alice', q{SELECT autocdc.resume_flow('alice_flow')});
	wait_for(q{SELECT lane = 'main' FROM autocdc.flows WHERE name = 'alice_flow'},
		'7: resumed, alice\'s flow moves back to the main slot');
	$open->query_safe('COMMIT');
	$open->quit;
	wait_for(q{SELECT count(*) = 1000 FROM alice.tgt WHERE v = 'open'},
		'7: back on the main slot, the flow applies the whole transaction');
}

# the slot samples (the sampler died with the crash: its samples committed)
my $max = sql(q{SELECT max(n) FROM slot_samples});
cmp_ok(sql(q{SELECT count(*) FROM slot_samples}), '>', 100, 'the sampler took samples');
cmp_ok($max, '<=', 3, "at most three slots existed at any sample ($max)");

$node->stop;
done_testing();
