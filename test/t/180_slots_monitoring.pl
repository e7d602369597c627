
# Replication slots and monitoring (docs/operations.md "Lanes and slots", "Monitoring").
#
#   1. With every replication slot of the server in use (max_replication_slots
#      = 3: two databases' main slots and a slot of someone else's), a third
#      database's flow shows state 'error', why (SQLSTATE 53400, a hint
#      naming max_replication_slots) and a lag_time; the WARNING is logged
#      once.  A database whose laggard slot cannot be copied goes on applying
#      its up-to-date flows.  Once a slot is freed, the waiting database takes
#      it within a few naptimes and its flow catches up.
#   2. autocdc.flows in each lane, after a restart (no lag notes in shared
#      memory): lag_time is never NULL while lag_time_exact is false (a
#      laggard whose only apply was its first read, a flow whose first read
#      is pending); holds_wal_back is true for the oldest flow of the laggard
#      slot only, not for an up-to-date flow of the main slot; resync_at shows
#      when autocdc.max_lag_age will take a laggard off its slot, and
#      resync_reason why it was (also for a paused flow, whose state stays
#      'paused'); a once flow has neither lag_time nor
#      lag_time_exact.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use AutocdcTest;

my $node = autocdc_node('slots', worker => 1,
	conf => [ 'max_replication_slots = 3', 'autocdc.naptime = 1s', 'autocdc.max_lag = 1MB' ]);

sub sql
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

# poll $sql in $db until it returns 't', for at most $secs seconds
sub poll
{
	my ($db, $sql, $secs) = @_;
	my $until = time + $secs;
	while (time < $until)
	{
		return 1 if sql($db, $sql) eq 't';
		select(undef, undef, undef, 0.2);
	}
	my $flows = eval { sql($db, q{SELECT string_agg(name || ' ' || state || ' ' || coalesce(last_error, '-'), '; ') FROM autocdc.flows}) };
	diag("$db: " . ($flows // 'no autocdc.flows'));
	return 0;
}

my $setup = q{
	CREATE EXTENSION autocdc;
	CREATE TABLE feed (k int, seq int, v text);
	SELECT autocdc.create_flow('tgt', 'feed', '{k}', 'seq');
};

# ---------------------------------------------------------------------
# 1. no replication slot left
# ---------------------------------------------------------------------
sql('postgres', q{SELECT pg_create_logical_replication_slot('someone_elses', 'pgoutput')});
for my $db (qw(d1 d2 d3))
{
	sql('postgres', "CREATE DATABASE $db");
}
for my $db (qw(d1 d2))
{
	sql($db, $setup);
	ok(poll($db, q{SELECT count(*) = 1 FROM pg_replication_slots
		WHERE slot_name LIKE 'autocdc\_%' AND database = current_database()}, 60),
		"1: $db has its main slot");
}
my $log_offset = -s $node->logfile;
sql('d3', $setup . q{INSERT INTO feed SELECT g, 1, 'x' FROM generate_series(1, 100) g;});
my $d3_since = time;
ok(poll('d3', q{SELECT state = 'error'
		AND last_error LIKE '%replication slot of autocdc could not be created: all replication slots are in use%'
		AND last_error_hint LIKE '%max_replication_slots%' AND last_error_sqlstate = '53400'
		AND last_error_at IS NOT NULL AND lane IS NULL
		AND lag_time IS NOT NULL AND NOT lag_time_exact
	FROM autocdc.flows WHERE name = 'tgt'}, 30),
	'1: the flow of a database without a slot shows the error, a hint and a lag');
sleep 3;
my $log = slurp_file($node->logfile, $log_offset);
my $warnings = () = $log =~ /WARNING:  autocdc: the replication slot of autocdc could not be created: all replication slots are in use/g;
is($warnings, 1, '1: the WARNING is logged once, not at every attempt');

# d1 wants a laggard slot (a paused flow far behind); there is none to have
sql('d1', q{
	CREATE TABLE feed2 (k int, seq int, v text);
	SELECT autocdc.create_flow('tgt2', 'feed2', '{k}', 'seq');
});
ok(poll('d1', q{SELECT last_run_at IS NOT NULL FROM autocdc.flows WHERE name = 'tgt2'}, 30),
	'1: d1\'s second flow has run');
sql('d1', q{SELECT autocdc.pause_flow('tgt2');
	CREATE TABLE ballast AS SELECT g, repeat('z', 500) AS z FROM generate_series(1, 6000) g;
	INSERT INTO feed VALUES (1, 1, 'x');});
ok(poll('d1', q{SELECT count(*) = 1 FROM tgt}, 10), '1: d1 still applies its up-to-date flow');
sql('d1', q{INSERT INTO feed VALUES (2, 1, 'x')});
ok(poll('d1', q{SELECT count(*) = 2 FROM tgt}, 10), '1: and again');
$log = slurp_file($node->logfile, $log_offset);
like($log, qr/WARNING:  autocdc: the laggard slot could not be created: all replication slots are in use/,
	'1: the laggard slot that cannot be copied is logged');
is(sql('d1', q{SELECT lane FROM autocdc.flows WHERE name = 'tgt2'}), 'main',
	'1: the paused flow stays on the main slot');
sql('d1', q{SELECT autocdc.resume_flow('tgt2')});
ok(poll('d1', q{SELECT state = 'idle' FROM autocdc.flows WHERE name = 'tgt2'}, 10), '1: resumed');
sql('d1', q{DROP TABLE ballast});

# free a slot: d3 takes it within a few naptimes (after more than 32 s of
# trying: a back-off that doubled from 1 s would next try 30 s later)
sleep 1 while time - $d3_since < 34;
sql('postgres', q{SELECT pg_drop_replication_slot('someone_elses')});
my $t0 = time;
ok(poll('d3', q{SELECT count(*) = 100 FROM tgt}, 8),
	'1: the freed slot is taken and the flow catches up within a few naptimes');
note sprintf('caught up %.1f s after the slot was freed', time - $t0);
ok(poll('d3', q{SELECT state = 'idle' AND last_error IS NULL FROM autocdc.flows WHERE name = 'tgt'}, 10),
	'1: and shows no error');
like(slurp_file($node->logfile, $log_offset), qr/LOG:  autocdc: the replication slot of database "d3" was created/,
	'1: the server log says the slot was created');

# ---------------------------------------------------------------------
# 2. each lane's columns
# ---------------------------------------------------------------------
# d2 leaves: its slot is freed for d1's laggard slot
sql('d2', q{DROP EXTENSION autocdc CASCADE});
ok(poll('postgres', q{SELECT count(*) = 2 FROM pg_replication_slots}, 30), '2: d2\'s slot is dropped');

sql('d1', q{
	CREATE TABLE feedb (k int, seq int, v text);
	INSERT INTO feedb SELECT g, 1, 'x' FROM generate_series(1, 10) g;
	SELECT autocdc.create_flow('b', 'feedb', '{k}', 'seq');
	CREATE TABLE feedc (k int, seq int, v text);
	SELECT autocdc.create_flow('c', 'feedc', '{k}', 'seq', continuous => false);
	SELECT autocdc.create_flow('d', 'feedc', '{k}', 'seq', continuous => false, name => 'never_run');
	CREATE TABLE once_src (k int, seq int, v text);
	SELECT autocdc.create_flow('o', 'once_src', '{k}', 'seq', once => true);
});
ok(poll('d1', q{SELECT count(*) = 10 FROM b}, 30), '2: b made its first read');
sql('d1', q{SELECT autocdc.pause_flow('b');
	SELECT num_events FROM autocdc.run_flow('c');
	SELECT num_events FROM autocdc.run_flow('o');});
sql('d1', q{INSERT INTO feedb SELECT g, 2, 'y' FROM generate_series(1, 800) g});
sql('d1', q{INSERT INTO feedc SELECT g, 2, 'y' FROM generate_series(1, 800) g});
sql('d1', q{CREATE TABLE ballast AS SELECT g, repeat('z', 500) AS z FROM generate_series(1, 6000) g});
sql('d1', q{INSERT INTO feed VALUES (3, 1, 'x')});
ok(poll('d1', q{SELECT string_agg(name || ':' || coalesce(lane, '-'), ',' ORDER BY name) = 'b:laggard,c:laggard,never_run:-,o:-,tgt:main,tgt2:main'
	FROM autocdc.flows}, 30), '2: b (paused) and c (behind) are on the laggard slot');

$node->restart;
sql('d1', q{INSERT INTO feed VALUES (4, 1, 'x')});
ok(poll('d1', q{SELECT count(*) = 4 FROM tgt}, 30), '2: restarted, the main lane applies');
ok(poll('d1', q{SELECT bool_and(lag_time IS NULL AND lag_time_exact AND NOT holds_wal_back)
	FROM autocdc.flows WHERE lane = 'main'}, 30),
	'2: the up-to-date flows of the main slot are caught up and hold no WAL back');
is(sql('d1', q{SELECT string_agg(name, ',' ORDER BY name) FROM autocdc.flows
	WHERE lag_time IS NULL AND lag_time_exact IS NOT TRUE AND kind = 'cdc' AND name <> 'o'}), '',
	'2: no change flow has lag_time NULL with lag_time_exact false');
is(sql('d1', q{SELECT string_agg(name || ':' || (lag_time > '0'::interval) || ':' || lag_time_exact || ':' || holds_wal_back,
	',' ORDER BY name) FROM autocdc.flows WHERE name IN ('b', 'c', 'never_run')}),
	'b:true:false:true,c:true:false:false,never_run:true:false:false',
	'2: laggards and a flow never run show a lag; the oldest laggard holds WAL back');
is(sql('d1', q{SELECT lag_time IS NULL AND lag_time_exact IS NULL FROM autocdc.flows WHERE name = 'o'}), 't',
	'2: a once flow has neither lag_time nor lag_time_exact');
is(sql('d1', q{SELECT count(*) FROM autocdc.flows WHERE resync_at IS NOT NULL}), '0',
	'2: no resync_at without autocdc.max_lag_age');

sql('d1', q{ALTER SYSTEM SET autocdc.max_lag_age = '1h'; SELECT pg_reload_conf()});
ok(poll('d1', q{SELECT current_setting('autocdc.max_lag_age') = '1h'}, 10), '2: max_lag_age set');
is(sql('d1', q{SELECT string_agg(name || ':' || (resync_at = laggard_since + '1h'::interval), ',' ORDER BY name)
	FROM autocdc.flows WHERE resync_at IS NOT NULL}), 'b:true,c:true',
	'2: resync_at shows when max_lag_age takes each laggard off its slot');
sql('d1', q{ALTER SYSTEM SET autocdc.max_lag_age = '2s'; SELECT pg_reload_conf()});
ok(poll('d1', q{SELECT bool_and(resync_reason LIKE '%max_lag_age%' AND lane IS NULL AND resync_at IS NULL
	AND lag_time IS NOT NULL AND NOT lag_time_exact AND NOT holds_wal_back)
	FROM autocdc.flows WHERE name IN ('b', 'c')}, 30),
	'2: past max_lag_age the laggards are taken off their slot, and say why');
is(sql('d1', q{SELECT string_agg(name || ':' || state, ',' ORDER BY name) FROM autocdc.flows WHERE name IN ('b', 'c')}),
	'b:paused,c:needs_resync', '2: the paused one stays paused (resync_reason tells), the other needs a resync');

$node->stop;
done_testing();
