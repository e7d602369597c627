
# The fault matrix: every way a run can be interrupted or disturbed, and
# after each the same two checks:
#
#   (a) the target equals an independent Perl model of every committed event
#       (SCD 1: per key the event with the greatest (sequence, arrival), the
#       key present iff that event is not a delete; arrival = commit order,
#       then VALUES order - each INSERT here is a transaction of its own), and
#   (b) exactly once: the flow's num_events in autocdc.flows equals the
#       number of feed rows it should have applied (a doubled apply raises it,
#       a lost one shows in the model comparison).
#
# Events are generated here with a fixed seed: few keys, sequences with many
# ties, late (smaller) sequences, deletes, NULL values.  The faults:
#
#   1. immediate shutdown in the middle of a run_flow (it sleeps in the
#      delete expression), commits arriving meanwhile
#   2. immediate shutdown between the target write and the commit of a run
#      (run_flow inside an open transaction), and during the target write
#      (a trigger on the target sleeps on one row)
#   3. SIGKILL of the background worker during a stream of commits (crash
#      restart), the stream continued afterwards
#   4. the replication slot invalidated (max_slot_wal_keep_size): run_flow
#      refuses with "needs a resync", full_refresh re-reads the feed, later
#      events once (num_events counts across the refresh)
#   5. ALTER TABLE feed ADD COLUMN between inserts, within one run's WAL
#   6. user UPDATE / DELETE / INSERT on the target: keys a later run touches
#      (even with only a late, losing event) get the fold's result back,
#      the others keep the user's edit
#   7. two sessions running one flow at once, repeatedly; two flows (two
#      feeds, overlapping keys, disjoint sequences) into one target run
#      concurrently from two sessions
#   8. two-phase commit in the source: prepared rows wait for COMMIT
#      PREPARED (across a crash), rolled back ones are never applied
#   9. large transactions with autocdc.decoding_work_mem, autocdc.work_mem
#      and work_mem at 64 kB (decoding and batches spill): a 20,000-row
#      transaction and new flows whose first read is 20,000 rows, through
#      run_flow and the worker; no temporary file leaks
#  10. statement_timeout and lock_timeout in a run: it fails, nothing
#      applied; the next run applies everything once
#  11. disk full in a run's spill: temp_file_limit, and a real write failure
#      from RLIMIT_FSIZE (PostgreSQL ignores SIGXFSZ "so that ulimit
#      violations work like disk full"; lowered on the running postmaster
#      with prlimit, no root needed)
#
# Node "faults" (worker off) runs 1, 2, 5-8, 10, 11 and last 4 (the small
# max_slot_wal_keep_size invalidates every slot of the cluster); node
# "faultsw" (worker on, naptime 100 ms) runs 3 and 9.

use strict;
use warnings;

use Digest::MD5 qw(md5_hex);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $seed = 8080;
srand($seed);
note "seed $seed";

############################################################################
# helpers
############################################################################

# Run SQL; return its output, or "ERROR: <stderr>" (never dies, so that an
# engine failure shows up as a failed assertion and the script goes on).
sub sql
{
	my ($node, $db, $sql, %opt) = @_;
	my $timed_out = 0;
	my ($rc, $out, $err) = $node->psql(
		$db, $sql,
		on_error_stop => 1,
		timeout => $opt{timeout} // 180,
		timed_out => \$timed_out);
	if ($timed_out)
	{
		diag("TIMEOUT running: " . substr($sql, 0, 300));
		return "ERROR: timeout";
	}
	if ($rc != 0)
	{
		diag("failed: " . substr($sql, 0, 300) . "\n$err") unless $opt{quiet};
		return "ERROR: $err";
	}
	return $out;
}

sub flow_col
{
	my ($node, $db, $flow, $col) = @_;
	return sql($node, $db, "SELECT $col FROM autocdc.flows WHERE name = '$flow'");
}

sub num_events { return flow_col(@_, 'num_events'); }

# run_flow in a transaction of its own: its num_events (or the error)
sub run_flow
{
	my ($node, $db, $flow, $pre) = @_;
	$pre //= '';
	return sql($node, $db, "$pre SELECT num_events FROM autocdc.run_flow('$flow')");
}

# A feed: events (hashes n, k, v, seq, op[, extra]) in arrival order, as
# committed.  n identifies an event (it is a column of the feed, so the
# target shows which event won).  bigv: v is repeat(md5(n), 56), made by
# SQL (1.8 kB per row); the model holds its md5.  extra: the feed has the
# column "extra" (from then on inserts set it).
sub new_feed
{
	my ($node, $db, $name, %o) = @_;
	return {
		node => $node,
		db => $db,
		name => $name,
		events => [],
		last_n => $o{n_from} // 0,
		bigv => $o{bigv} // 0,
		extra => 0,
	};
}

# $count random events for feed $f: keys from $o{keys} (default 1..40),
# sequences base .. base + spread - 1 (ties), a fraction late (below base:
# older than earlier batches), deletes, NULL values.  parity => 0|1 makes
# every sequence even|odd (two feeds into one target never tie).
sub gen
{
	my ($f, $count, %o) = @_;
	my $keys = $o{keys} // [ 1 .. 40 ];
	my $base = $o{base} // 100;
	my $spread = $o{spread} // 8;
	my $late = $o{late} // 0.1;
	my $del = $o{del} // 0.15;
	my @ev;
	for (1 .. $count)
	{
		my $n = ++$f->{last_n};
		my $seq = rand() < $late ? int(rand($base)) : $base + int(rand($spread));
		$seq = $seq * 2 + $o{parity} if defined $o{parity};
		my $d = rand() < $del;
		my $v;
		if ($f->{bigv})
		{
			$v = md5_hex(md5_hex($n) x 56);
		}
		elsif (!$d && rand() >= 0.05)
		{
			$v = "v$n";
		}
		my %e = (n => $n, k => $keys->[ int(rand(@$keys)) ], seq => $seq,
			op => $d ? 'D' : 'U', v => $v);
		$e{extra} = rand() < 0.2 ? undef : int(rand(1000)) if $f->{extra};
		push @ev, \%e;
	}
	return @ev;
}

# split events into INSERT statements of 1..$max rows
sub chunks
{
	my ($max, @ev) = @_;
	my @stmts;
	while (@ev)
	{
		my $len = 1 + int(rand($max));
		push @stmts, [ splice(@ev, 0, $len) ];
	}
	return @stmts;
}

sub lit
{
	my ($x) = @_;
	return defined $x ? "'$x'" : 'NULL';
}

# one INSERT statement (one transaction, rows in VALUES order)
sub stmt_sql
{
	my ($f, $stmt) = @_;
	my @rows;
	for my $e (@$stmt)
	{
		my @c = ($e->{n}, $e->{k});
		push @c, lit($e->{v}) unless $f->{bigv};
		push @c, $e->{seq}, lit($e->{op});
		push @c, $e->{extra} // 'NULL' if $f->{extra};
		push @rows, '(' . join(', ', @c) . ')';
	}
	if ($f->{bigv})
	{
		return "INSERT INTO $f->{name} (n, k, v, seq, op) SELECT n, k, repeat(md5(n::text), 56), seq, op FROM (VALUES "
		  . join(', ', @rows) . ") t(n, k, seq, op);\n";
	}
	my $cols = $f->{extra} ? 'n, k, v, seq, op, extra' : 'n, k, v, seq, op';
	return "INSERT INTO $f->{name} ($cols) VALUES " . join(', ', @rows) . ";\n";
}

# Insert statements (arrayrefs of events), each a transaction of its own, in
# order; on success the events are committed, in that arrival order.
sub feed_insert
{
	my ($f, @stmts) = @_;
	my $out = sql($f->{node}, $f->{db}, join('', map { stmt_sql($f, $_) } @stmts));
	if ($out =~ /^ERROR/)
	{
		fail("insert into $f->{name}");
		return 0;
	}
	push @{ $f->{events} }, map { @$_ } @stmts;
	return 1;
}

sub fmt
{
	my ($f, $e) = @_;
	my $s = "$e->{k}:" . ($e->{v} // '-') . ":$e->{seq}:$e->{n}";
	$s .= ':' . ($e->{extra} // '-') if $f->{extra};
	return $s;
}

# The model: key => row of the target (absent keys left out) for events in
# arrival order.  A later arrival with an equal sequence wins (>=).
sub model_map
{
	my ($f, @events) = @_;
	@events = @{ $f->{events} } unless @events;
	my %win;
	for my $e (@events)
	{
		my $w = $win{ $e->{k} };
		$win{ $e->{k} } = $e if !$w || $e->{seq} >= $w->{seq};
	}
	return { map { $_ => fmt($f, $win{$_}) } grep { $win{$_}{op} ne 'D' } keys %win };
}

sub join_map
{
	my ($m) = @_;
	return join(' ', map { $m->{$_} } sort { $a <=> $b } keys %$m);
}

# the model of a feed's committed events (or of the events given)
sub model
{
	my ($f, @events) = @_;
	return join_map(model_map($f, @events));
}

# the target in the model's format
sub dump_sql
{
	my ($f, $target) = @_;
	my $v = $f->{bigv} ? 'md5(v)' : q{coalesce(v, '-')};
	my $x = $f->{extra} ? q{ || ':' || coalesce(extra::text, '-')} : '';
	return qq{SELECT coalesce(string_agg(format('%s:%s:%s:%s', k, $v, seq, n)$x, ' ' ORDER BY k), '') FROM $target};
}

sub dump_target
{
	my ($f, $target) = @_;
	return sql($f->{node}, $f->{db}, dump_sql($f, $target));
}

# (a) and (b): target = model, num_events = expected (default: every
# committed event of the feed)
sub check_flow
{
	my ($f, $flow, $target, $what, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $n = $o{n} // scalar(@{ $f->{events} });
	is(dump_target($f, $target), $o{model} // model($f), "$what: target = model");
	is(num_events($f->{node}, $f->{db}, $flow), $n, "$what: num_events = $n (each event once)");
}

sub create_feed_sql
{
	my ($name) = @_;
	return "CREATE TABLE $name (n int, k int, v text, seq int, op text);";
}

sub postmaster_pid
{
	my ($node) = @_;
	open(my $fh, '<', $node->data_dir . '/postmaster.pid') or return undef;
	my $pid = <$fh>;
	close($fh);
	chomp $pid;
	return $pid;
}

############################################################################
# node "faults": the background worker off, run_flow only
############################################################################

my $node = autocdc_node('faults',
	conf => [ 'restart_after_crash = on', 'max_prepared_transactions = 5', 'log_temp_files = 0' ]);
my $db = 'postgres';

# the delete expression of some flows: sleeps on the row whose v is 'SLOW'
# when the session sets fault.sleep (seconds)
$node->safe_psql($db, q{
	CREATE EXTENSION autocdc;
	CREATE FUNCTION public.is_delete(op text, v text) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		IF v = 'SLOW' AND coalesce(current_setting('fault.sleep', true), '') <> '' THEN
			PERFORM pg_sleep(current_setting('fault.sleep', true)::float8);
		END IF;
		RETURN op = 'D';
	END $$;
});

# a flow (continuous => false) over a new feed, run once (empty)
sub setup_flow
{
	my ($node, $db, $feed, $flow, $target, %o) = @_;
	my $del = $o{slow} ? q{'public.is_delete(op, v)'} : q{$$op = 'D'$$};
	my $out = sql($node, $db, ($o{no_feed} ? '' : create_feed_sql($feed)) . qq{
		SELECT autocdc.create_flow('$target', '$feed', '{k}', 'seq', apply_as_deletes => $del,
								   name => '$flow', continuous => @{[ $o{continuous} ? 'true' : 'false' ]});});
	is($out, $flow, "create flow $flow");
	is(run_flow($node, $db, $flow), '0', "first run of $flow") unless $o{no_run};
}

# mark one upsert of a list of events 'SLOW' (its delete expression sleeps)
sub plant_slow
{
	my (@ev) = @_;
	my @u = grep { $_->{op} eq 'U' } @ev;
	$u[ int(@u / 2) ]{v} = 'SLOW';
}

###########################################################################
# 1. immediate shutdown in the middle of a run_flow
###########################################################################
{
	my $f = new_feed($node, $db, 'f1');
	setup_flow($node, $db, 'f1', 'c1', 't1', slow => 1);
	feed_insert($f, chunks(5, gen($f, 150, base => 100)));
	is(run_flow($node, $db, 'c1'), '150', '1: run before the crash');
	check_flow($f, 'c1', 't1', '1: before the crash');
	my $n_before = scalar @{ $f->{events} };
	my $model_before = model($f);

	my @b = gen($f, 150, base => 200);
	plant_slow(@b);
	feed_insert($f, chunks(5, @b));
	my $s = $node->background_psql($db, on_error_stop => 0);
	$s->query_until(qr/started/, qq{
		\\echo started
		SET fault.sleep = '120';
		SELECT 'crashed-run:' || num_events FROM autocdc.run_flow('c1');
	});
	ok( $node->poll_query_until($db, q{
			SELECT count(*) > 0 FROM pg_stat_activity
			 WHERE wait_event = 'PgSleep' AND query LIKE '%run_flow(''c1'')%'}),
		'1: the run sleeps in the middle of applying (in its delete expression)');
	is(flow_col($node, $db, 'c1', 'state'), 'running', '1: the flow shows running');
	# commits that arrive while the run is in progress
	feed_insert($f, chunks(5, gen($f, 50, base => 300)));

	$node->stop('immediate', fail_ok => 1);
	eval { $s->quit; };
	$node->start;

	check_flow($f, 'c1', 't1', '1: after the crash, the crashed run left nothing',
		n => $n_before, model => $model_before);
	is(run_flow($node, $db, 'c1'), '200', '1: the next run applies the crashed run\'s events and the later ones');
	check_flow($f, 'c1', 't1', '1: after the crash and a run');
	is(run_flow($node, $db, 'c1'), '0', '1: nothing applied twice');
	is(flow_col($node, $db, 'c1', 'state'), 'idle', '1: the flow is idle');
}

###########################################################################
# 2. immediate shutdown between the target write and the progress commit
###########################################################################
{
	my $f = new_feed($node, $db, 'f2');
	setup_flow($node, $db, 'f2', 'c2', 't2');
	feed_insert($f, chunks(4, gen($f, 120, base => 100)));
	is(run_flow($node, $db, 'c2'), '120', '2: first batch');
	my $n_before = scalar @{ $f->{events} };
	my $model_before = model($f);

	feed_insert($f, chunks(4, gen($f, 120, base => 200, late => 0.3)));
	my $s = $node->background_psql($db, on_error_stop => 0);
	$s->query_safe('BEGIN');
	my ($o, $e) = $s->query(q{SELECT num_events FROM autocdc.run_flow('c2')});
	is("$o/$e", '120/0', '2: run_flow in an open transaction applies the batch');
	is($s->query(dump_sql($f, 't2')), model($f), '2: the run\'s transaction sees the target = model');
	is(dump_target($f, 't2'), $model_before, '2: others do not see the uncommitted run');
	is(flow_col($node, $db, 'c2', 'state'), 'running', '2: the flow shows running');

	$node->stop('immediate', fail_ok => 1);
	eval { $s->quit; };
	$node->start;

	check_flow($f, 'c2', 't2', '2: after the crash before COMMIT, nothing of the run',
		n => $n_before, model => $model_before);
	is(run_flow($node, $db, 'c2'), '120', '2: the next run applies the batch once');
	check_flow($f, 'c2', 't2', '2: after the crash and a run');
	is(run_flow($node, $db, 'c2'), '0', '2: nothing applied twice');
}

# 2b. immediate shutdown while the run writes the target: a trigger on the
# target sleeps on the row whose v is 'SLOW' (that event wins its new key)
{
	my $f = new_feed($node, $db, 'f2b');
	setup_flow($node, $db, 'f2b', 'c2b', 't2b');
	is( sql($node, $db, q{
			CREATE FUNCTION public.slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.v = 'SLOW' AND coalesce(current_setting('fault.sleep', true), '') <> '' THEN
					PERFORM pg_sleep(current_setting('fault.sleep', true)::float8);
				END IF;
				RETURN NEW;
			END $$;
			CREATE TRIGGER t2b_slow BEFORE INSERT ON t2b FOR EACH ROW EXECUTE FUNCTION public.slow_row();}),
		'', '2b: a trigger on the target that can sleep');
	feed_insert($f, chunks(4, gen($f, 100, base => 100)));
	is(run_flow($node, $db, 'c2b'), '100', '2b: first batch');
	my ($n0, $m0) = (scalar(@{ $f->{events} }), model($f));

	my @b = gen($f, 120, base => 200, late => 0.2);
	splice(@b, 60, 0, { n => ++$f->{last_n}, k => 1000, seq => 1000000, op => 'U', v => 'SLOW' });
	feed_insert($f, chunks(4, @b));
	my $s = $node->background_psql($db, on_error_stop => 0);
	$s->query_until(qr/started/, qq{
		\\echo started
		SET fault.sleep = '120';
		SELECT 'crashed-run:' || num_events FROM autocdc.run_flow('c2b');
	});
	ok( $node->poll_query_until($db, q{
			SELECT count(*) > 0 FROM pg_stat_activity
			 WHERE wait_event = 'PgSleep' AND query LIKE '%run_flow(''c2b'')%'}),
		'2b: the run sleeps while inserting into the target');
	$node->stop('immediate', fail_ok => 1);
	eval { $s->quit; };
	$node->start;

	check_flow($f, 'c2b', 't2b', '2b: after a crash during the target write, nothing of the run',
		n => $n0, model => $m0);
	is(run_flow($node, $db, 'c2b'), '121', '2b: the next run applies the batch once');
	check_flow($f, 'c2b', 't2b', '2b: after the crash and a run');
	is(run_flow($node, $db, 'c2b'), '0', '2b: nothing applied twice');
}

###########################################################################
# 5. source DDL mid-stream: ALTER TABLE feed ADD COLUMN
###########################################################################
{
	my $f = new_feed($node, $db, 'f5');
	setup_flow($node, $db, 'f5', 'c5', 't5');
	feed_insert($f, chunks(4, gen($f, 80, base => 100)));
	is(run_flow($node, $db, 'c5'), '80', '5: first batch');
	check_flow($f, 'c5', 't5', '5: before the DDL');

	# inserts before and after the DDL, decoded by one run
	feed_insert($f, chunks(4, gen($f, 60, base => 200)));
	is(sql($node, $db, 'ALTER TABLE f5 ADD COLUMN extra int'), '', '5: ADD COLUMN extra to the feed');
	$f->{extra} = 1;
	feed_insert($f, chunks(4, gen($f, 80, base => 300)));
	is(run_flow($node, $db, 'c5'), '140', '5: the run across the DDL applies both sides');
	is(sql($node, $db, q{SELECT count(*) FROM pg_attribute WHERE attrelid = 't5'::regclass AND attname = 'extra' AND NOT attisdropped}),
		'1', '5: the target gained the column');
	check_flow($f, 'c5', 't5', '5: after the DDL (earlier winners NULL in extra)');
	feed_insert($f, chunks(4, gen($f, 60, base => 400, late => 0.3)));
	is(run_flow($node, $db, 'c5'), '60', '5: a later run');
	check_flow($f, 'c5', 't5', '5: after later inserts with extra');
	my @winners = values %{ model_map($f) };
	ok((grep { /:-$/ } @winners) && (grep { /:\d+$/ } @winners),
		'5: the target holds winners from before the DDL (extra NULL) and after it');
}

###########################################################################
# 6. user DML on the target
###########################################################################
{
	my $f = new_feed($node, $db, 'f6');
	setup_flow($node, $db, 'f6', 'c6', 't6');
	feed_insert($f, chunks(4, gen($f, 200, keys => [ 1 .. 30 ], base => 100, del => 0.1)));
	is(run_flow($node, $db, 'c6'), '200', '6: first batch');
	check_flow($f, 'c6', 't6', '6: before the user edits');

	my $m = model_map($f);
	my @present = sort { $a <=> $b } keys %$m;
	ok(@present >= 12, '6: enough keys present (' . scalar(@present) . ')');
	# keys edited by hand: updated / deleted, later touched / not touched
	my @upd_t = @present[ 0 .. 2 ];
	my @upd_u = @present[ 3 .. 5 ];
	my @del_t = @present[ 6 .. 8 ];
	my @del_u = @present[ 9 .. 11 ];
	my $upd = join(',', @upd_t, @upd_u);
	my $del = join(',', @del_t, @del_u);
	is( sql($node, $db, qq{
			UPDATE t6 SET v = 'user-edit' WHERE k IN ($upd);
			DELETE FROM t6 WHERE k IN ($del);
			INSERT INTO t6 (k, v, seq, n, op) VALUES (999, 'user-row', 1, 0, 'U');}),
		'', '6: the user updates, deletes and inserts target rows');

	# later events touch the *_t keys only (plus untouched-by-user keys);
	# the first key of each touched set gets only a late, losing event
	my @late;
	for my $k ($upd_t[0], $del_t[0])
	{
		my $n = ++$f->{last_n};
		push @late, { n => $n, k => $k, seq => -1, op => 'U', v => "late$n" };
	}
	my %edited = map { $_ => 1 } @upd_t, @upd_u, @del_t, @del_u;
	my @others = grep { !$edited{$_} } 1 .. 30;
	my @new = gen($f, 60, keys => [ @upd_t[ 1 .. 2 ], @del_t[ 1 .. 2 ], @others ], base => 200, late => 0.2);
	# make sure each of those touched keys gets at least one event
	for my $k (@upd_t[ 1 .. 2 ], @del_t[ 1 .. 2 ])
	{
		push @new, gen($f, 1, keys => [$k], base => 300, late => 0, del => 0);
	}
	feed_insert($f, chunks(4, @late, @new));
	is(run_flow($node, $db, 'c6'), scalar(@late) + scalar(@new), '6: the run after the edits');

	my $exp = model_map($f);
	for my $k (@upd_u)
	{
		(my $r = $exp->{$k}) =~ s/^(\d+):[^:]*:/$1:user-edit:/;
		$exp->{$k} = $r;
	}
	delete $exp->{$_} for @del_u;
	$exp->{999} = '999:user-row:1:0';
	is(dump_target($f, 't6'), join_map($exp),
		'6: touched keys have the fold result again, untouched keys keep the user\'s edits');
	my $fold = model_map($f);
	is( sql($node, $db, 'SELECT string_agg(format(\'%s:%s:%s:%s\', k, coalesce(v, \'-\'), seq, n), \' \' ORDER BY k) FROM t6 WHERE k IN ('
			  . join(',', $upd_t[0], $del_t[0]) . ')'),
		join(' ', map { $fold->{$_} } sort { $a <=> $b } ($upd_t[0], $del_t[0])),
		'6: a key touched only by a late (losing) event is restored to the fold result');
	is(num_events($node, $db, 'c6'), scalar(@{ $f->{events} }), '6: num_events (each event once)');
}

###########################################################################
# 7. concurrent runs: one flow from two sessions; two flows into one target
###########################################################################

# a session running run_flow($flow) $n times, one transaction each
sub run_loop
{
	my ($node, $db, $flow, $n) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-c', qq{
			DO \$\$ BEGIN FOR i IN 1..$n LOOP
				PERFORM * FROM autocdc.run_flow('$flow');
				COMMIT;
				PERFORM pg_sleep(0.01);
			END LOOP; END \$\$} ],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

sub loop_finish
{
	my ($l, $what) = @_;
	$l->[0]->finish;
	is(${ $l->[2] }, '', "$what: the session's runs never failed");
}

# events as statements with a short sleep between, so that they arrive
# while the runs go on
sub slow_insert_sql
{
	my ($f, @stmts) = @_;
	return join('SELECT pg_sleep(0.02);' . "\n", map { stmt_sql($f, $_) } @stmts);
}

{
	my $f = new_feed($node, $db, 'f7');
	setup_flow($node, $db, 'f7', 'c7', 't7');
	my @stmts = chunks(6, gen($f, 300, base => 100, late => 0.15));
	my $l1 = run_loop($node, $db, 'c7', 50);
	my $l2 = run_loop($node, $db, 'c7', 50);
	my $out = sql($node, $db, slow_insert_sql($f, @stmts));
	push @{ $f->{events} }, map { @$_ } @stmts unless $out =~ /^ERROR/;
	loop_finish($l1, '7: one flow, first session');
	loop_finish($l2, '7: one flow, second session');
	run_flow($node, $db, 'c7');
	check_flow($f, 'c7', 't7', '7: one flow run by two sessions at once');
	is( sql($node, $db, q{SELECT sum(num_events) FROM autocdc.flow_runs WHERE flow = 'c7' AND status = 'ok'}),
		'300', '7: the logged runs add up to the events');
	is( sql($node, $db, q{SELECT count(*) >= 3 FROM autocdc.flow_runs WHERE flow = 'c7' AND num_events > 0}),
		't', '7: the events were applied by several of the concurrent runs');

	# two feeds, overlapping keys, A's sequences even and B's odd
	my $fa = new_feed($node, $db, 'f7a');
	my $fb = new_feed($node, $db, 'f7b', n_from => 100000);
	setup_flow($node, $db, 'f7a', 'c7a', 't7ab');
	setup_flow($node, $db, 'f7b', 'c7b', 't7ab');
	my @sa = chunks(5, gen($fa, 250, keys => [ 1 .. 30 ], base => 100, parity => 0));
	my @sb = chunks(5, gen($fb, 250, keys => [ 1 .. 30 ], base => 100, parity => 1));
	my $la = run_loop($node, $db, 'c7a', 50);
	my $lb = run_loop($node, $db, 'c7b', 50);
	# interleave the two feeds' statements in one insert session
	my @order;
	my ($ia, $ib) = (0, 0);
	while ($ia < @sa || $ib < @sb)
	{
		if ($ib >= @sb || ($ia < @sa && rand() < 0.5)) { push @order, [ $fa, $sa[ $ia++ ] ]; }
		else { push @order, [ $fb, $sb[ $ib++ ] ]; }
	}
	$out = sql($node, $db,
		join('SELECT pg_sleep(0.02);' . "\n", map { stmt_sql($_->[0], $_->[1]) } @order));
	unless ($out =~ /^ERROR/)
	{
		push @{ $fa->{events} }, map { @$_ } @sa;
		push @{ $fb->{events} }, map { @$_ } @sb;
	}
	loop_finish($la, '7: flow a into the shared target');
	loop_finish($lb, '7: flow b into the shared target');
	run_flow($node, $db, 'c7a');
	run_flow($node, $db, 'c7b');
	# no ties across the feeds: the union in any cross-feed order is the model
	is(dump_target($fa, 't7ab'), model($fa, @{ $fa->{events} }, @{ $fb->{events} }),
		'7: the shared target = model of both feeds\' events');
	is(num_events($node, $db, 'c7a'), '250', '7: flow a applied each of its events once');
	is(num_events($node, $db, 'c7b'), '250', '7: flow b applied each of its events once');
}

###########################################################################
# 8. two-phase commit in the source
###########################################################################
{
	my $f = new_feed($node, $db, 'f8');
	setup_flow($node, $db, 'f8', 'c8', 't8');
	feed_insert($f, chunks(4, gen($f, 60, base => 100)));
	is(run_flow($node, $db, 'c8'), '60', '8: first batch');

	my @x = gen($f, 40, base => 200);
	my @y = gen($f, 40, base => 300);
	is( sql($node, $db, 'BEGIN; ' . stmt_sql($f, \@x) . "PREPARE TRANSACTION 'x';"
			  . 'BEGIN; ' . stmt_sql($f, \@y) . "PREPARE TRANSACTION 'y';"),
		'', '8: two prepared transactions inserting into the feed');
	feed_insert($f, chunks(4, gen($f, 30, base => 200)));
	is(run_flow($node, $db, 'c8'), '30', '8: the run applies nothing of the prepared transactions');
	check_flow($f, 'c8', 't8', '8: prepared rows not applied');

	# prepared transactions survive a crash
	$node->stop('immediate', fail_ok => 1);
	$node->start;
	is(sql($node, $db, 'SELECT string_agg(gid, \',\' ORDER BY gid) FROM pg_prepared_xacts'), 'x,y',
		'8: both still prepared after a crash');
	is(run_flow($node, $db, 'c8'), '0', '8: still nothing of them after the crash');

	is(sql($node, $db, "COMMIT PREPARED 'x'"), '', '8: COMMIT PREPARED x');
	push @{ $f->{events} }, @x;
	feed_insert($f, chunks(4, gen($f, 30, base => 250)));
	is(run_flow($node, $db, 'c8'), '70', '8: the run applies the committed prepared transaction once');
	check_flow($f, 'c8', 't8', '8: after COMMIT PREPARED');
	is(sql($node, $db, "ROLLBACK PREPARED 'y'"), '', '8: ROLLBACK PREPARED y');
	feed_insert($f, chunks(4, gen($f, 20, base => 400)));
	is(run_flow($node, $db, 'c8'), '20', '8: the rolled-back transaction is never applied');
	is(run_flow($node, $db, 'c8'), '0', '8: nothing more');
	check_flow($f, 'c8', 't8', '8: at the end');
}

###########################################################################
# 10. statement_timeout and lock_timeout in a run
###########################################################################
{
	my $f = new_feed($node, $db, 'f10');
	setup_flow($node, $db, 'f10', 'c10', 't10', slow => 1);
	feed_insert($f, chunks(4, gen($f, 80, base => 100)));
	is(run_flow($node, $db, 'c10'), '80', '10: first batch');
	my ($n0, $m0) = (scalar(@{ $f->{events} }), model($f));

	my @b = gen($f, 80, base => 200);
	plant_slow(@b);
	feed_insert($f, chunks(4, @b));
	like(run_flow($node, $db, 'c10', q{SET fault.sleep = '10'; SET statement_timeout = '50ms';}),
		qr/ERROR.*canceling statement due to statement timeout/, '10: a slow run fails on statement_timeout');
	check_flow($f, 'c10', 't10', '10: after the timeout nothing applied', n => $n0, model => $m0);
	is(run_flow($node, $db, 'c10'), '80', '10: a run without the timeout applies the batch');
	check_flow($f, 'c10', 't10', '10: after statement_timeout and a run');
	is(flow_col($node, $db, 'c10', 'state'), 'idle', '10: the flow is idle again');

	($n0, $m0) = (scalar(@{ $f->{events} }), model($f));
	feed_insert($f, chunks(4, gen($f, 60, base => 300, late => 0.3)));
	my $s = $node->background_psql($db, on_error_stop => 0);
	$s->query_safe('BEGIN; LOCK TABLE t10 IN ACCESS EXCLUSIVE MODE');
	like(run_flow($node, $db, 'c10', q{SET lock_timeout = '100ms';}),
		qr/ERROR.*lock timeout/, '10: a run fails on lock_timeout while another session locks the target');
	is(num_events($node, $db, 'c10'), $n0, '10: nothing counted while the target was locked');
	$s->query_safe('COMMIT');
	$s->quit;
	check_flow($f, 'c10', 't10', '10: after lock_timeout nothing applied', n => $n0, model => $m0);
	is(run_flow($node, $db, 'c10'), '60', '10: after the lock is released the run applies the batch once');
	check_flow($f, 'c10', 't10', '10: after lock_timeout and a run');
	is(run_flow($node, $db, 'c10'), '0', '10: nothing more');
}

###########################################################################
# 11. disk full in a run's spill
###########################################################################
{
	# (a) temp_file_limit: the batch spills past 64 kB
	my $f = new_feed($node, $db, 'f11');
	setup_flow($node, $db, 'f11', 'c11', 't11');
	feed_insert($f, chunks(4, gen($f, 50, base => 100)));
	is(run_flow($node, $db, 'c11'), '50', '11: first batch');
	my ($n0, $m0) = (scalar(@{ $f->{events} }), model($f));
	feed_insert($f, chunks(400, gen($f, 4000, keys => [ 1 .. 500 ], base => 200, spread => 30)));
	like( run_flow($node, $db, 'c11',
			q{SET temp_file_limit = '64kB'; SET work_mem = '64kB'; SET autocdc.work_mem = '64kB';}),
		qr/ERROR.*temporary file size exceeds "?temp_file_limit"?/,    # 18 quotes the name
		'11: a run whose spill exceeds temp_file_limit fails with a clear error');
	check_flow($f, 'c11', 't11', '11: after temp_file_limit nothing applied', n => $n0, model => $m0);
	is(run_flow($node, $db, 'c11', q{SET work_mem = '64kB'; SET autocdc.work_mem = '64kB';}),
		'4000', '11: the run without the limit (still spilling) applies the batch');
	check_flow($f, 'c11', 't11', '11: after temp_file_limit and a run');

	# (b) a real write failure: RLIMIT_FSIZE of 17 MB on the postmaster (new
	# backends inherit it; WAL segments are 16 MB).  The feed is truncated
	# between inserts (the events stay in the WAL) so that no relation file
	# grows past the limit; only the run's 22 MB spill does.
	my $fb = new_feed($node, $db, 'f11b', bigv => 1);
	setup_flow($node, $db, 'f11b', 'c11b', 't11b');
	feed_insert($fb, chunks(20, gen($fb, 30, keys => [ 1 .. 200 ], base => 100)));
	is(run_flow($node, $db, 'c11b'), '30', '11: first batch (big rows)');
	($n0, $m0) = (scalar(@{ $fb->{events} }), model($fb));
	for my $i (1 .. 4)
	{
		feed_insert($fb, chunks(1000, gen($fb, 3000, keys => [ 1 .. 200 ], base => 100 + 100 * $i, spread => 40)));
		sql($node, $db, 'TRUNCATE f11b');
	}
	my $pm = postmaster_pid($node);
	my $lowered = defined $pm && system('prlimit', '--pid', $pm, '--fsize=17825792:') == 0;
	SKIP:
	{
		skip 'prlimit cannot lower the postmaster\'s RLIMIT_FSIZE', 6 unless $lowered;
		my $err = run_flow($node, $db, 'c11b', q{SET work_mem = '64kB'; SET autocdc.work_mem = '64kB';});
		system('prlimit', '--pid', $pm, '--fsize=unlimited:') == 0
		  or BAIL_OUT('could not restore RLIMIT_FSIZE of the postmaster');
		like($err, qr/ERROR.*(File too large|No space left on device)/,
			'11: a run whose spill hits the file size limit fails (EFBIG, like disk full)');
		check_flow($fb, 'c11b', 't11b', '11: after the write failure nothing applied', n => $n0, model => $m0);
		is(run_flow($node, $db, 'c11b'), '12000', '11: after the limit is lifted the run applies everything once');
		check_flow($fb, 'c11b', 't11b', '11: after the write failure and a run');
	}
}

###########################################################################
# 4. slot invalidated (max_slot_wal_keep_size); last on this node: every
#    slot of the cluster is lost
###########################################################################
{
	sql($node, $db, q{ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'; SELECT pg_reload_conf();});
	my $d4 = 'slotloss';
	sql($node, $db, "CREATE DATABASE $d4");
	sql($node, $d4, 'CREATE EXTENSION autocdc');
	my $f = new_feed($node, $d4, 'f4');
	setup_flow($node, $d4, 'f4', 'c4', 't4');
	feed_insert($f, chunks(4, gen($f, 100, base => 100)));
	is(run_flow($node, $d4, 'c4'), '100', '4: first batch');
	check_flow($f, 'c4', 't4', '4: before the slot is lost');
	# events committed but not applied before the slot is lost
	feed_insert($f, chunks(4, gen($f, 80, base => 200, late => 0.3)));

	for my $i (1 .. 2)
	{
		sql($node, $d4, qq{
			CREATE TABLE junk$i AS SELECT g, md5(g::text) AS m FROM generate_series(1, 250000) g;
			SELECT pg_switch_wal();
			CHECKPOINT;});
	}
	ok( $node->poll_query_until($d4, q{
			SELECT bool_and(wal_status = 'lost' OR restart_lsn IS NULL) FROM pg_replication_slots
			 WHERE slot_name LIKE 'autocdc\_%' AND database = current_database()}),
		'4: the slot is invalidated');
	my $state = flow_col($node, $d4, 'c4', 'state');
	my $retained = flow_col($node, $d4, 'c4', q{coalesce(retained_wal_bytes::text, 'NULL')});
	note "4: with the lost slot, before any run: state $state, retained_wal_bytes $retained";
	is($state, 'needs_resync', '4: the flow shows needs_resync once its slot is lost');
	is($retained, 'NULL', '4: a lost slot retains no WAL (not the distance from 0/0)');
	like(run_flow($node, $d4, 'c4'), qr/ERROR.*needs a resync.*\n.*full_refresh/s,
		'4: run_flow refuses with "needs a resync" and the full_refresh hint');
	is(flow_col($node, $d4, 'c4', 'state'), 'needs_resync', '4: the flow shows needs_resync');
	check_flow($f, 'c4', 't4', '4: nothing applied by the refused run', n => 100,
		model => model($f, @{ $f->{events} }[ 0 .. 99 ]));

	my $nfeed = scalar @{ $f->{events} };
	is(sql($node, $d4, q{SELECT num_events FROM autocdc.full_refresh('c4')}), $nfeed,
		'4: full_refresh re-reads every row of the feed');
	is(flow_col($node, $d4, 'c4', 'state'), 'idle', '4: idle after full_refresh');
	my $n_after_refresh = 100 + $nfeed;
	check_flow($f, 'c4', 't4', '4: after full_refresh (num_events counts across it)', n => $n_after_refresh);
	feed_insert($f, chunks(4, gen($f, 70, base => 300, late => 0.3)));
	is(run_flow($node, $d4, 'c4'), '70', '4: later events applied after the refresh');
	check_flow($f, 'c4', 't4', '4: after the refresh and new events', n => $n_after_refresh + 70);
	is(run_flow($node, $d4, 'c4'), '0', '4: nothing applied twice');
}

my $log = slurp_file($node->logfile);
is(join("\n", $log =~ /^.*temporary file leak.*$/mg), '', 'faults: no temporary file leak');
is(join("\n", $log =~ /^.*terminated by signal.*$/mg), '', 'faults: no server process crashed');
$node->stop('fast', fail_ok => 1);

############################################################################
# node "faultsw": the background worker on
############################################################################

my $nw = autocdc_node('faultsw', worker => 1,
	conf => [ "autocdc.naptime = '100ms'", 'restart_after_crash = on' ]);

sub wait_num_events
{
	my ($node, $db, $flow, $n, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok( $node->poll_query_until($db,
			"SELECT num_events >= $n FROM autocdc.flows WHERE name = '$flow'"),
		"$what: the worker reached $n events");
}

###########################################################################
# 3. SIGKILL of the background worker during a stream of commits
###########################################################################
{
	my $d3 = 'w3';
	sql($nw, 'postgres', "CREATE DATABASE $d3");
	sql($nw, $d3, 'CREATE EXTENSION autocdc');
	my $f = new_feed($nw, $d3, 'f3');
	setup_flow($nw, $d3, 'f3', 'c3', 't3', continuous => 1, no_run => 1);
	feed_insert($f, chunks(4, gen($f, 50, base => 100)));
	wait_num_events($nw, $d3, 'c3', 50, '3: first batch');
	check_flow($f, 'c3', 't3', '3: first batch by the worker');

	my @ev = gen($f, 500, base => 200, late => 0.15);
	my @stmts = chunks(3, @ev);
	my $script = $nw->basedir . '/stream3.sql';
	append_to_file($script, join('SELECT pg_sleep(0.01);' . "\n", map { stmt_sql($f, $_) } @stmts));
	my ($iout, $ierr) = ('', '');
	my $ins = IPC::Run::start([ 'psql', '-X', '-q', '-d', $nw->connstr($d3), '-f', $script ],
		'>', \$iout, '2>', \$ierr);
	ok($nw->poll_query_until($d3, 'SELECT count(*) >= 150 FROM f3'), '3: the stream of commits is under way');
	my $w = sql($nw, 'postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'autocdc worker' AND datname = 'w3'});
	like($w, qr/^\d+$/, '3: the worker runs');
	my $at_kill = sql($nw, $d3, 'SELECT count(*) FROM f3');
	kill 'KILL', $w if $w =~ /^\d+$/;
	$ins->finish;    # the crash restart ends the inserting session
	ok(wait_for_restart($nw), '3: the server is back after the crash restart');

	# which statements committed: a prefix (n identifies each event)
	my ($cnt, $maxn) = split /\|/, sql($nw, $d3, 'SELECT count(*), coalesce(max(n), 0) FROM f3');
	is($cnt, $maxn, '3: the committed events are a prefix of the stream');
	ok($maxn < 550, "3: the worker was killed mid-stream ($maxn of 550 events committed)");
	my @done = grep { $_->{n} <= $maxn } @ev;
	push @{ $f->{events} }, @done;
	my @rest_stmts = chunks(3, grep { $_->{n} > $maxn } @ev);
	# keep inserting
	feed_insert($f, @rest_stmts) if @rest_stmts;
	feed_insert($f, chunks(3, gen($f, 60, base => 300, late => 0.2)));
	my $total = scalar @{ $f->{events} };
	wait_num_events($nw, $d3, 'c3', $total, '3: after the crash');
	check_flow($f, 'c3', 't3', '3: after SIGKILL of the worker');
	feed_insert($f, chunks(3, gen($f, 10, base => 400)));
	wait_num_events($nw, $d3, 'c3', $total + 10, '3: one more batch');
	check_flow($f, 'c3', 't3', '3: later, nothing doubled');
	ok($nw->poll_query_until($d3, q{SELECT state FROM autocdc.flows WHERE name = 'c3'}, 'idle'),
		'3: the flow is idle');
}

###########################################################################
# 9. large transactions, decoding and batches spilling
###########################################################################
{
	sql($nw, 'postgres', q{
		ALTER SYSTEM SET autocdc.decoding_work_mem = '64kB';
		ALTER SYSTEM SET autocdc.work_mem = '64kB';
		ALTER SYSTEM SET work_mem = '64kB';
		ALTER SYSTEM SET log_temp_files = 0;
		SELECT pg_reload_conf();});
	my $d9 = 'big';
	sql($nw, 'postgres', "CREATE DATABASE $d9");
	sql($nw, $d9, 'CREATE EXTENSION autocdc');
	my $offset = -s $nw->logfile;
	my $f = new_feed($nw, $d9, 'f9');
	setup_flow($nw, $d9, 'f9', 'r9', 'tr9');
	setup_flow($nw, $d9, 'f9', 'w9', 'tw9', continuous => 1, no_feed => 1, no_run => 1);
	feed_insert($f, chunks(10, gen($f, 100, keys => [ 1 .. 3000 ], base => 100)));
	is(run_flow($nw, $d9, 'r9'), '100', '9: first batch by run_flow');
	wait_num_events($nw, $d9, 'w9', 100, '9: first batch');

	# one transaction of 20,000 rows
	feed_insert($f, [ gen($f, 20000, keys => [ 1 .. 3000 ], base => 200, spread => 50) ]);
	is(run_flow($nw, $d9, 'r9'), '20000', '9: run_flow applies the 20,000-row transaction');
	check_flow($f, 'r9', 'tr9', '9: big transaction through run_flow');
	wait_num_events($nw, $d9, 'w9', 20100, '9: big transaction');
	check_flow($f, 'w9', 'tw9', '9: big transaction through the worker');

	# new flows over the 20,100 rows: their first read
	setup_flow($nw, $d9, 'f9', 'r9n', 'tr9n', no_feed => 1, no_run => 1);
	setup_flow($nw, $d9, 'f9', 'w9n', 'tw9n', continuous => 1, no_feed => 1, no_run => 1);
	is(run_flow($nw, $d9, 'r9n'), '20100', '9: a new flow\'s first read through run_flow');
	check_flow($f, 'r9n', 'tr9n', '9: first read through run_flow');
	wait_num_events($nw, $d9, 'w9n', 20100, '9: first read');
	check_flow($f, 'w9n', 'tw9n', '9: first read through the worker');

	feed_insert($f, chunks(50, gen($f, 500, keys => [ 1 .. 3000 ], base => 300, late => 0.3)));
	is(run_flow($nw, $d9, 'r9'), '500', '9: later events, run_flow');
	is(run_flow($nw, $d9, 'r9n'), '500', '9: later events, run_flow (new flow)');
	wait_num_events($nw, $d9, 'w9', 20600, '9: later events');
	wait_num_events($nw, $d9, 'w9n', 20600, '9: later events (new flow)');
	for my $fl ([ 'r9', 'tr9' ], [ 'w9', 'tw9' ], [ 'r9n', 'tr9n' ], [ 'w9n', 'tw9n' ])
	{
		check_flow($f, $fl->[0], $fl->[1], "9: $fl->[0] at the end");
	}
	# (the worker's flows show running while a pass holds them)
	ok( $nw->poll_query_until($d9, q{SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM autocdc.flows},
			'r9=idle r9n=idle w9=idle w9n=idle'),
		'9: every flow idle');
	is( sql($nw, $d9, q{SELECT spill_txns > 0 FROM pg_stat_replication_slots
						  WHERE slot_name LIKE 'autocdc\_%' AND slot_name IN
							(SELECT slot_name FROM pg_replication_slots WHERE database = current_database())}),
		't', '9: decoding spilled transactions to disk');
	my $log9 = slurp_file($nw->logfile, $offset);
	like($log9, qr/temporary file: path/, '9: runs spilled to temporary files');
	is(join("\n", $log9 =~ /^.*temporary file leak.*$/mg), '', '9: no temporary file leak');
}

my $logw = slurp_file($nw->logfile);
is(join("\n", grep { !/autocdc worker/ } ($logw =~ /^.*terminated by signal.*$/mg)), '',
	'faultsw: no process but the killed worker crashed');
$nw->stop('fast', fail_ok => 1);

done_testing();
