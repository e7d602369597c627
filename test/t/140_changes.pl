
# 140_changes.pl — randomized property test of changes(tbl) sources against
# a small Perl model of what they promise: an SCD 1 flow keeps its target
# equal to the table as of the last applied commit, and an SCD 2 flow keeps
# every committed version of every row, each version starting at the commit
# time of the transaction that made it and ending at the commit time of the
# transaction that changed or removed it.
#
# A stream is a random list of transactions on a table with a primary key
# (inserts, updates of a value column, updates of the key, updates that
# change nothing, deletes, deletes and re-inserts of a key, and now and then
# a TRUNCATE), with autocdc.run_flow() after a random number of them.  The
# model replays the same transactions on a hash and records, per
# transaction, which keys differ before and after it; each transaction
# logs its xid, and track_commit_timestamp gives its commit time.  After the
# last run: the SCD 1 target equals the table and the model, the SCD 2
# target equals the model's versions row for row (times to the
# microsecond), and a flow created half-way (its first read under a
# snapshot) equals the table too.  Values of some rows are out of line
# (several kB, not compressible), and the table is vacuumed between runs: an
# unchanged out-of-line value must come from the WAL's old row (odd streams:
# REPLICA IDENTITY FULL) or from each flow's row store (even streams: the
# default identity), never from the TOAST table.
#
# A second part lets the worker apply a continuous changes() flow into an
# SCD 2 target and chains a second flow on that target's change feed; a
# paused flow over out-of-line values resumes after VACUUM FULL.
#
#     AUTOCDC_PROPERTY_STREAMS=50 AUTOCDC_PROPERTY_SEED=7 \
#         make installcheck REGRESS= PROVE_TESTS=test/t/140_changes.pl

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;
use Time::HiRes qw(sleep);

my $seed = length($ENV{AUTOCDC_PROPERTY_SEED} // '') ? $ENV{AUTOCDC_PROPERTY_SEED} : 42;
my $streams = length($ENV{AUTOCDC_PROPERTY_STREAMS} // '') ? int($ENV{AUTOCDC_PROPERTY_STREAMS} / 5) + 1 : 10;
srand($seed);
note "seed $seed, $streams streams";

my $node = autocdc_node('changes', worker => 1,
	conf => [ 'track_commit_timestamp = on', 'autocdc.naptime = 100ms' ]);
$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# a value: short, NULL, or long and out of line (md5 chains do not compress)
sub value
{
	my $r = rand();
	return 'NULL' if $r < 0.15;
	return sprintf("'v%d'", int(rand(5))) if $r < 0.8;
	return sprintf("(SELECT string_agg(md5((g * %d)::text), '') FROM generate_series(1, 120) g)",
		int(rand(1000)) + 1);
}

# the model's value of an SQL value expression: evaluated by the server once
my %value_cache;
sub value_of
{
	my ($expr) = @_;
	return undef if $expr eq 'NULL';
	$value_cache{$expr} //= sql("SELECT md5($expr)");
	return $value_cache{$expr};
}

sub row_text
{
	my ($k, $row) = @_;
	return join('|', $k, map { $_ // 'NULL' } @$row);
}

my $failures = 0;
for my $stream (1 .. $streams)
{
	my $identity = $stream % 2 ? 'FULL' : 'DEFAULT';
	sql(qq{
		SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow;
		DROP TABLE IF EXISTS src, txlog CASCADE;
		CREATE TABLE src (id int PRIMARY KEY, a int, b text);
		ALTER TABLE src ALTER b SET STORAGE EXTERNAL;
		ALTER TABLE src REPLICA IDENTITY $identity;
		CREATE TABLE txlog (n int, x xid8);
		SELECT autocdc.create_flow(target => 'p_copy', source => 'changes(src)', keys => '{id}',
			continuous => false);
		SELECT autocdc.create_flow(target => 'p_hist', source => 'changes(src)', keys => '{id}',
			stored_as_scd_type => '2', continuous => false);
		-- p_copy keeps no hidden state, p_lsn (commit LSN order) keeps it
		SELECT autocdc.create_flow(target => 'p_lsn', source => 'changes(src)', keys => '{id}',
			sequence_by => '_commit_lsn', continuous => false);
		SELECT num_events FROM autocdc.run_flow('p_copy');
		SELECT num_events FROM autocdc.run_flow('p_lsn');
		SELECT num_events FROM autocdc.run_flow('p_hist');});

	my %model;        # id -> [a, md5(b)]
	my @changes;      # per transaction: [n, {id -> the row after it ('' if gone)}] of the keys it changed
	my @script;
	my $ntx = 8 + int(rand(25));
	my $late_at = 1 + int(rand($ntx));
	for my $n (1 .. $ntx)
	{
		my %before = map { $_ => [ @{ $model{$_} } ] } keys %model;
		my @stmts;
		if (rand() < 0.06)
		{
			push @stmts, 'TRUNCATE src';
			%model = ();
		}
		else
		{
			for (1 .. 1 + int(rand(4)))
			{
				my @ids = sort { $a <=> $b } keys %model;
				my $r = rand();
				if (!@ids || $r < 0.3)
				{
					my $id = int(rand(12));
					next if exists $model{$id};
					my ($a, $b) = (int(rand(3)), value());
					push @stmts, "INSERT INTO src VALUES ($id, $a, $b)";
					$model{$id} = [ $a, value_of($b) ];
				}
				elsif ($r < 0.5)
				{
					my $id = $ids[ int(rand(@ids)) ];
					my $a = int(rand(3));
					push @stmts, "UPDATE src SET a = $a WHERE id = $id";
					$model{$id}[0] = $a;
				}
				elsif ($r < 0.6)
				{
					my $id = $ids[ int(rand(@ids)) ];
					my $b = value();
					push @stmts, "UPDATE src SET b = $b WHERE id = $id";
					$model{$id}[1] = value_of($b);
				}
				elsif ($r < 0.7)
				{
					my $id = $ids[ int(rand(@ids)) ];
					my $to = 12 + int(rand(12));
					next if exists $model{$to};
					push @stmts, "UPDATE src SET id = $to WHERE id = $id";
					$model{$to} = delete $model{$id};
				}
				elsif ($r < 0.75)
				{
					my $id = $ids[ int(rand(@ids)) ];
					push @stmts, "UPDATE src SET a = a WHERE id = $id";
				}
				elsif ($r < 0.9)
				{
					my $id = $ids[ int(rand(@ids)) ];
					push @stmts, "DELETE FROM src WHERE id = $id";
					delete $model{$id};
				}
				else
				{
					my $id = $ids[ int(rand(@ids)) ];
					my ($a, $b) = (int(rand(3)), value());
					push @stmts, "DELETE FROM src WHERE id = $id", "INSERT INTO src VALUES ($id, $a, $b)";
					$model{$id} = [ $a, value_of($b) ];
				}
			}
		}
		my $tx = "BEGIN;\n" . join(";\n", @stmts, "INSERT INTO txlog VALUES ($n, pg_current_xact_id())")
		  . ";\nCOMMIT;";
		push @script, $tx;
		sql($tx);
		my %diff;
		for my $id (keys %before, keys %model)
		{
			my ($x, $y) = ($before{$id}, $model{$id});
			my $tx_ = defined $x ? row_text($id, $x) : '';
			my $ty = defined $y ? row_text($id, $y) : '';
			$diff{$id} = $ty if $tx_ ne $ty;
		}
		push @changes, [ $n, \%diff ];
		if ($n == $late_at)
		{
			push @script, '-- a flow created here';
			sql(q{SELECT autocdc.create_flow(target => 'p_late', source => 'changes(src)', keys => '{id}',
				continuous => false)});
		}
		if (rand() < 0.35)
		{
			push @script, 'SELECT run_flow(p_copy), run_flow(p_lsn), run_flow(p_hist)';
			sql(q{SELECT num_events FROM autocdc.run_flow('p_copy'); SELECT num_events FROM autocdc.run_flow('p_hist');
				SELECT num_events FROM autocdc.run_flow('p_lsn');});
			sql('VACUUM src') if rand() < 0.5;
		}
	}
	sql(q{SELECT num_events FROM autocdc.run_flow('p_copy'); SELECT num_events FROM autocdc.run_flow('p_hist');
		SELECT num_events FROM autocdc.run_flow('p_late'); SELECT num_events FROM autocdc.run_flow('p_lsn');});

	# the model's SCD 2 rows: per key, the versions the transactions made
	my %ts = map { split /\|/ } split /\n/,
	  sql(q{SELECT n, (extract(epoch FROM pg_xact_commit_timestamp(x::text::xid)) * 1000000)::bigint FROM txlog});
	my (%open, @versions);
	for my $c (@changes)
	{
		my ($n, $diff) = @$c;
		for my $id (sort { $a <=> $b } keys %$diff)
		{
			my $y = $diff->{$id};	# the row after the transaction, '' if gone
			if (defined $open{$id})
			{
				$open{$id}[2] = $ts{$n};
				push @versions, delete $open{$id};
			}
			$open{$id} = [ $y, $ts{$n}, undef ] if $y ne '';
		}
	}
	push @versions, values %open;
	my $want_hist = join("\n", sort map { join('|', $_->[0], $_->[1], $_->[2] // 'NULL') } @versions);
	my $got_hist = join("\n", sort split /\n/, sql(q{
		SELECT concat_ws('|', id, coalesce(a::text, 'NULL'), coalesce(md5(b), 'NULL'),
			(extract(epoch FROM __start_at) * 1000000)::bigint,
			coalesce(((extract(epoch FROM __end_at) * 1000000)::bigint)::text, 'NULL'))
		  FROM p_hist}));
	my $want_copy = join("\n", sort map { row_text($_, $model{$_}) } keys %model);
	my %got;
	for my $t (qw(src p_copy p_late p_lsn))
	{
		$got{$t} = join("\n", sort split /\n/, sql(qq{
			SELECT concat_ws('|', id, coalesce(a::text, 'NULL'), coalesce(md5(b), 'NULL')) FROM $t}));
	}
	# the copy's target keeps no hidden state (its hidden state table stays empty)
	my $copy_tid = sql(q{SELECT id FROM autocdc.target WHERE relid = 'p_copy'::regclass AND NOT keeps_state});
	my $copy_state = $copy_tid eq '' ? 'keeps state' : sql(qq{SELECT count(*) FROM autocdc_state.target_$copy_tid});
	my $lsn_tid = sql(q{SELECT id FROM autocdc.target WHERE relid = 'p_lsn'::regclass});
	$copy_state .= '/' . sql(qq{SELECT count(*) > 0 OR NOT EXISTS (SELECT FROM p_lsn) FROM autocdc_state.target_$lsn_tid});
	my $ok = $got{src} eq $want_copy && $got{p_copy} eq $want_copy && $got{p_late} eq $want_copy
	  && $got{p_lsn} eq $want_copy && $got_hist eq $want_hist && $copy_state eq '0/t';
	if (!$ok)
	{
		$failures++;
		diag "stream $stream (seed $seed, REPLICA IDENTITY $identity) differs:\n" . join("\n", @script);
		is($got{src}, $want_copy, "stream $stream: the table is the model");
		is($got{p_copy}, $want_copy, "stream $stream: SCD 1");
		is($got{p_late}, $want_copy, "stream $stream: SCD 1 created half-way");
		is($got{p_lsn}, $want_copy, "stream $stream: SCD 1 in commit LSN order, with hidden state");
		is($copy_state, '0/t', "stream $stream: the SCD 1 copy keeps no hidden state, the other one does");
		is($got_hist, $want_hist, "stream $stream: SCD 2");
		last;
	}
}
is($failures, 0, "$streams random streams: SCD 1 equals the table, SCD 2 the model's versions");

# the worker: continuous changes() flows into SCD 1 and SCD 2, and a chain:
# an SCD 2 history of the SCD 1 copy, from the copy's change feed
sql(q{
	SELECT autocdc.drop_flow(name, drop_target => true) FROM autocdc.flow;
	DROP TABLE IF EXISTS src, txlog CASCADE;
	CREATE TABLE acct (id int PRIMARY KEY, balance int);
	SELECT autocdc.create_flow(target => 'acct_copy', source => 'changes(acct)', keys => '{id}');
	SELECT autocdc.create_flow(target => 'acct_hist', source => 'changes(acct)', keys => '{id}',
		stored_as_scd_type => '2');
	SELECT autocdc.create_flow(target => 'acct_copy_hist', source => 'changes(acct_copy)', keys => '{id}',
		stored_as_scd_type => '2');
	INSERT INTO acct SELECT g, 0 FROM generate_series(1, 20) g;});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 20 FROM acct_hist}),
	'worker: the inserts are applied');
for my $i (1 .. 30)
{
	sql(sprintf('UPDATE acct SET balance = balance + 1 WHERE id = %d', 1 + int(rand(20))));
}
sql('DELETE FROM acct WHERE id = 1');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 50 AND count(*) FILTER (WHERE __end_at IS NULL) = 19 FROM acct_hist}),
	'worker: every committed version is in the history, the deleted key closed');
is(sql(q{SELECT count(*) FROM acct_hist h JOIN acct a USING (id) WHERE h.__end_at IS NULL AND h.balance = a.balance}),
	'19', 'worker: the open versions are the table');
ok($node->poll_query_until('postgres', q{
		SELECT NOT EXISTS (SELECT * FROM acct EXCEPT SELECT * FROM acct_copy)
		   AND NOT EXISTS (SELECT * FROM acct_copy EXCEPT SELECT * FROM acct)}),
	'worker: the copy is the table');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) FILTER (WHERE __end_at IS NULL) = 19
		   AND count(*) FILTER (WHERE id = 1 AND __end_at IS NOT NULL) >= 1
		   AND NOT EXISTS (SELECT id, balance FROM acct_copy_hist WHERE __end_at IS NULL
		                   EXCEPT SELECT id, balance FROM acct_copy)
		  FROM acct_copy_hist}),
	'chain: the history of the copy, from its change feed, ends where the copy is');
is(sql(q{SELECT count(*) FROM autocdc.flows WHERE last_error IS NOT NULL OR state IN ('error', 'needs_resync')}),
	'0', 'worker: no flow in error');

# out-of-line values under the default identity, applied by the worker: a
# flow paused while its rows are updated (the values kept, changed, kept
# again), the table rewritten by VACUUM FULL (every TOAST pointer the WAL
# holds is stale), then resumed
sql(q{
	CREATE TABLE docs (id int PRIMARY KEY, body text, n int);
	INSERT INTO docs SELECT g, (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 150) i), 0
	  FROM generate_series(1, 10) g;
	SELECT autocdc.create_flow(target => 'docs_hist', source => 'changes(docs)', keys => '{id}',
		stored_as_scd_type => '2');});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 10 FROM docs_hist}),
	'row store: the worker applies the first read');
sql(q{SELECT autocdc.pause_flow('docs_hist')});
sql(q{
	UPDATE docs SET n = 1;
	UPDATE docs SET body = (SELECT string_agg(md5((id * 7 + i)::text), '') FROM generate_series(1, 150) i), n = 2
	 WHERE id % 2 = 0;
	UPDATE docs SET n = 3;
	UPDATE docs SET id = id + 100, n = 4 WHERE id % 3 = 0;
	DELETE FROM docs WHERE id = 1;});
sql('VACUUM FULL docs');
sql(q{SELECT autocdc.resume_flow('docs_hist')});
ok($node->poll_query_until('postgres', q{
		SELECT count(*) FILTER (WHERE __end_at IS NULL) = 9 FROM docs_hist}),
	'row store: resumed, the paused flow applies its backlog');
is(sql(q{SELECT count(*) FROM (SELECT id, body, n FROM docs EXCEPT
		SELECT id, body, n FROM docs_hist WHERE __end_at IS NULL) d}),
	'0', 'row store: the open versions are the table, values kept by the updates included');
is(sql(q{SELECT count(*) FROM docs_hist WHERE n = 1 AND length(body) = 4800}),
	'10', 'row store: the versions of the paused updates hold their values');

# lag_time of a changes() flow counts updates and deletes, not only inserts
sql(q{
	SELECT autocdc.create_flow(target => 'acct_lag', source => 'changes(acct)', keys => '{id}',
		continuous => false);
	SELECT num_events FROM autocdc.run_flow('acct_lag');});
is(sql(q{SELECT lag_time IS NULL FROM autocdc.flows WHERE name = 'acct_lag'}), 't',
	'lag_time: none right after a run');
sql('UPDATE acct SET balance = balance + 1 WHERE id = 2');
ok($node->poll_query_until('postgres', q{
		SELECT lag_time IS NOT NULL AND NOT lag_time_exact FROM autocdc.flows WHERE name = 'acct_lag'}),
	'lag_time: an update not applied yet shows (as an estimate)');
sql(q{SELECT num_events FROM autocdc.run_flow('acct_lag')});
is(sql(q{SELECT lag_time IS NULL FROM autocdc.flows WHERE name = 'acct_lag'}), 't',
	'lag_time: none once it is applied');

# a change that cannot be told (the replica identity no longer holds the
# keys) puts a continuous flow in needs_resync: off its slot (it pins
# nothing), left alone by the worker (no retries), the other flows going on;
# full_refresh brings it back with its history
sql(q{
	CREATE TABLE ident (id int PRIMARY KEY, v text);
	INSERT INTO ident VALUES (1, 'a'), (2, 'b');
	SELECT autocdc.create_flow(target => 'ident_hist', source => 'changes(ident)', keys => '{id}',
		stored_as_scd_type => '2');});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM ident_hist}),
	'resync: the first read is applied');
sql(q{ALTER TABLE ident REPLICA IDENTITY NOTHING; UPDATE ident SET v = 'a2' WHERE id = 1;});
ok($node->poll_query_until('postgres', q{
		SELECT f.state = 'needs_resync' AND s.slot_name IS NULL AND s.resync_reason LIKE '%cannot be told%'
		  FROM autocdc.flows f JOIN autocdc.flow_state s USING (name) WHERE name = 'ident_hist'}),
	'resync: an untold update takes the flow off its slot, needs_resync');
my $failed = sql(q{SELECT count(*) FROM autocdc.flow_runs WHERE flow = 'ident_hist' AND status = 'error'});
sql('UPDATE acct SET balance = balance + 100 WHERE id = 3');
ok($node->poll_query_until('postgres', q{
		SELECT balance >= 100 FROM acct_copy WHERE id = 3}),
	'resync: the other flows go on');
sleep(3);
is(sql(q{SELECT count(*) FROM autocdc.flow_runs WHERE flow = 'ident_hist' AND status = 'error'}),
	$failed, 'resync: the worker does not retry it');
sql(q{ALTER TABLE ident REPLICA IDENTITY DEFAULT;
	SELECT num_events FROM autocdc.full_refresh('ident_hist');});
is(sql(q{SELECT CASE WHEN state IN ('idle', 'running') THEN 'ok' ELSE state END || ' ' || (SELECT string_agg(v, ',' ORDER BY id, __start_at) FROM ident_hist)
		   FROM autocdc.flows WHERE name = 'ident_hist'}),
	'ok a,a2,b', 'resync: full_refresh brings it back, the history kept');
sql(q{UPDATE ident SET v = 'b2' WHERE id = 2});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 4 FROM ident_hist}),
	'resync: the worker applies it again');

# a partitioned table, applied by the worker: inserts into every leaf, moves
# between leaves (delete + insert), a leaf attached later, a TRUNCATE of the
# whole table (one truncate event); the copy ends equal to the table and the
# history holds one closed version per row the TRUNCATE emptied
sql(q{
	CREATE TABLE pt (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);
	CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (0) TO (1000);
	CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (1000) TO (2000);
	INSERT INTO pt SELECT g, 0 FROM generate_series(1, 1999, 50) g;
	SELECT autocdc.create_flow(target => 'pt_copy', source => 'changes(pt)', keys => '{id}');
	SELECT autocdc.create_flow(target => 'pt_hist', source => 'changes(pt)', keys => '{id}',
		stored_as_scd_type => '2');});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 40 FROM pt_hist}),
	'partitioned: the first read is applied');
for my $i (1 .. 20)
{
	my $id = 1 + 50 * int(rand(40));
	sql(sprintf('UPDATE pt SET id = id + 1001, v = v + 1 WHERE id = %d AND id < 1000', $id));
	sql(sprintf('UPDATE pt SET v = v + 1 WHERE id = %d', 1051 + 50 * int(rand(19))));
}
sql(q{CREATE TABLE pt_3 (LIKE pt INCLUDING ALL);
	ALTER TABLE pt ATTACH PARTITION pt_3 FOR VALUES FROM (2000) TO (3000);
	INSERT INTO pt VALUES (2001, 7), (2051, 8);});
ok($node->poll_query_until('postgres', q{
		SELECT NOT EXISTS (SELECT * FROM pt EXCEPT SELECT * FROM pt_copy)
		   AND NOT EXISTS (SELECT * FROM pt_copy EXCEPT SELECT * FROM pt)
		   AND NOT EXISTS (SELECT id, v FROM pt_hist WHERE __end_at IS NULL EXCEPT SELECT * FROM pt)
		   AND (SELECT count(*) FROM pt_hist WHERE __end_at IS NULL) = (SELECT count(*) FROM pt)}),
	'partitioned: moves and an attached empty leaf; the copy and the open versions are the table');
my $open = sql(q{SELECT count(*) FROM pt_hist WHERE __end_at IS NULL});
sql('TRUNCATE pt');
ok($node->poll_query_until('postgres', q{
		SELECT (SELECT count(*) FROM pt_copy) = 0 AND NOT EXISTS (SELECT FROM pt_hist WHERE __end_at IS NULL)}),
	'partitioned: a TRUNCATE of the table empties the copy and closes every version');
is(sql(q{SELECT count(DISTINCT __end_at) FROM pt_hist WHERE __end_at = (SELECT max(__end_at) FROM pt_hist)}) . ' '
	 . sql(q{SELECT count(*) FROM pt_hist WHERE __end_at = (SELECT max(__end_at) FROM pt_hist)}),
	"1 $open", 'partitioned: one truncate event ended the open versions at one time');
is(sql(q{SELECT count(*) FROM autocdc.flows WHERE name IN ('pt_copy', 'pt_hist') AND state NOT IN ('idle', 'running')}),
	'0', 'partitioned: no flow in error or needing a resync');

# a chain of three flows applies within a second of the upstream commit,
# with a naptime of 30 s: the worker starts its next pass at once after a
# pass that wrote the source of a continuous flow (a commit of another
# session wakes it; its own do not).  In a database of its own, where
# nothing else commits.
sql(q{
	ALTER SYSTEM SET autocdc.naptime = '30s';
	SELECT pg_reload_conf();
	CREATE DATABASE chain;});
sub chain_sql { return $node->safe_psql('chain', $_[0]); }
chain_sql(q{
	CREATE EXTENSION autocdc;
	CREATE TABLE c0 (id int PRIMARY KEY, v text);
	SELECT autocdc.create_flow(target => 'c1', source => 'changes(c0)', keys => '{id}');
	SELECT autocdc.create_flow(target => 'c2', source => 'changes(c1)', keys => '{id}');
	SELECT autocdc.create_flow(target => 'c3', source => 'changes(c2)', keys => '{id}',
		stored_as_scd_type => '2');});
ok($node->poll_query_until('chain', q{
		SELECT count(*) = 3 FROM autocdc.flows WHERE last_run_at IS NOT NULL AND state = 'idle'}),
	'chain: the three flows made their first reads');
sleep(2);
my ($rc, $out, $err);
my @lat;
for my $i (1 .. 5)
{
	($rc, $out, $err) = $node->psql('chain', qq{
		DO \$\$DECLARE t0 timestamptz;
		BEGIN
		  INSERT INTO c0 VALUES ($i, 'x');
		  COMMIT;
		  t0 := clock_timestamp();
		  LOOP
		    EXIT WHEN EXISTS (SELECT FROM c3 WHERE id = $i);
		    IF clock_timestamp() - t0 > interval '60 s' THEN RAISE 'not visible after 60 s'; END IF;
		    PERFORM pg_sleep(0.01);
		  END LOOP;
		  RAISE NOTICE 'latency %', round(extract(epoch FROM clock_timestamp() - t0)::numeric, 3);
		END\$\$;});
	push @lat, $err =~ /latency ([\d.]+)/ ? $1 : 999;
	sleep(0.5);
}
my ($worst) = sort { $b <=> $a } @lat;
note 'chain latencies: ' . join(' ', @lat);
cmp_ok($worst, '<', 1, "chain: three flows apply within a second of the upstream commit (worst $worst s)");
($rc, $out, $err) = $node->psql('chain',
	q{SELECT autocdc.create_flow(target => 'c0', source => 'changes(c2)', keys => '{id}')});
like($err, qr/flow "c0" would close a cycle of flows/, 'chain: a flow that would close a cycle is refused');

done_testing();
