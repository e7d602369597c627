
# The upgrade from autocdc 0.1 (the release at commit 8c83c06): flows of
# every 0.1 kind run on a server with the 0.1 library; the current library
# is installed and the server restarted; until ALTER EXTENSION autocdc
# UPDATE, nothing is applied (the worker says so once, run_flow refuses with
# the hint); after it, applying continues where 0.1 stopped, every event
# exactly once (targets equal a model of all events written in this file,
# num_events equal the events written).  Finally a database that was
# upgraded and one created fresh at the current version hold the same
# extension objects.
#
# The 0.1 library is built from that commit's tree and installed, with the
# current one after it, into a private copy of the PostgreSQL installation
# (AutocdcTest's old_autocdc_installation), so the system's installation is
# never touched.  091_upgrade_02.pl does the same from 0.2.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $old_commit = '8c83c06';
my $src = $ENV{TESTDIR} // '.';

if (system("git -C '$src' cat-file -e '$old_commit^{commit}' >/dev/null 2>&1") != 0)
{
	plan skip_all =>
	  "this checkout has no commit $old_commit (autocdc 0.1, a shallow clone or no .git): the upgrade from 0.1 cannot be built";
}

# 0.1 was made for PostgreSQL 15 alone: it does not build on 16 or later
# (its compat.h predates their API changes), so no server of those can have
# run it
my ($major) = pg_config('version') =~ /^PostgreSQL (\d+)/;
if ($major != 15)
{
	plan skip_all =>
	  "autocdc 0.1 supports PostgreSQL 15 only and does not build on $major: there is no 0.1 installation on PostgreSQL $major to upgrade from";
}

# --- a private PostgreSQL installation with the 0.1 library ----------------
my $tmp = PostgreSQL::Test::Utils::tempdir;
my ($install_path, $inst) = old_autocdc_installation($src, $old_commit, $tmp);
my $node = autocdc_node('upgrade', worker => 1, install_path => $install_path,
	conf => ["autocdc.naptime = '100ms'", "autocdc.snapshot_interval = '1s'", 'jit = off']);

is($node->safe_psql('postgres', q{CREATE EXTENSION autocdc;
	SELECT extversion FROM pg_extension WHERE extname = 'autocdc'}), '0.1', 'the extension is at 0.1');

# --- flows of every 0.1 kind ------------------------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE feed (k int, v text, seq int, op text);
	CREATE TABLE extract (k int, v text, seq int, op text);
	INSERT INTO extract VALUES (1, 'x1', 0, 'U'), (2, 'x2', 0, 'U'), (99, 'x99', 0, 'U');
	-- continuous SCD 1 and SCD 2 flows, applied by the worker
	SELECT autocdc.create_flow('t1', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op}');
	SELECT autocdc.create_flow('t2', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op}', stored_as_scd_type => '2');
	-- a once backfill into the SCD 1 target
	SELECT autocdc.create_flow('t1', 'extract', '{k}', 'seq', once => true, name => 'backfill',
							   except_column_list => '{seq, op}');
	-- applied by run_flow only
	SELECT autocdc.create_flow('r1', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op}', continuous => false);
});
upgrade_snapshot_flows($node);
# the statement form
$node->safe_psql('postgres', q{
	DO LANGUAGE autocdc $$
	CREATE FLOW t3 AS AUTO CDC INTO t3 FROM stream(feed) KEYS (k)
	APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (seq, op) STORED AS SCD TYPE 2;
	$$;
});

# --- events and the model ----------------------------------------------------
# arrival order is the order written here (one statement per transaction)
my @events;
my $seq = 0;
srand(20261201);

sub write_events
{
	my ($n) = @_;
	my @rows;
	for (1 .. $n)
	{
		my $k = 1 + int(rand(12));
		# mostly increasing, some late (older) and some equal sequences
		my $s = $seq + int(rand(6)) - 3;
		$seq += 2;
		my $op = rand() < 0.15 ? 'D' : 'U';
		my $v = "v$k-" . int(rand(1000));
		push @events, [ $k, $v, $s, $op ];
		push @rows, "($k, '$v', $s, '$op')";
	}
	while (my @chunk = splice(@rows, 0, 7))
	{
		$node->safe_psql('postgres', 'INSERT INTO feed VALUES ' . join(', ', @chunk));
	}
}

# events of a key sorted by (sequence, arrival), ties settled: last arrival wins
sub key_events
{
	my %by;
	for my $i (0 .. $#events)
	{
		my ($k, $v, $s, $op) = @{ $events[$i] };
		$by{$k}{$s} = [ $v, $s, $op ];
	}
	return map { my $k = $_; [ $k, [ map { $by{$k}{$_} } sort { $a <=> $b } keys %{ $by{$k} } ] ] }
	  sort { $a <=> $b } keys %by;
}

sub model_scd1
{
	my @rows;
	for my $ke (key_events())
	{
		my ($k, $evs) = @$ke;
		my $last = $evs->[-1];
		push @rows, "$k|$last->[0]" if $last->[2] ne 'D';
	}
	return join("\n", @rows);
}

sub model_scd2
{
	my @rows;
	for my $ke (key_events())
	{
		my ($k, $evs) = @$ke;
		my $open;
		for my $e (@$evs)
		{
			my ($v, $s, $op) = @$e;
			if ($op eq 'D')
			{
				push @rows, "$k|$open->[0]|$open->[1]|$s" if $open;
				undef $open;
			}
			elsif (!$open || $open->[0] ne $v)
			{
				push @rows, "$k|$open->[0]|$open->[1]|$s" if $open;
				$open = [ $v, $s ];
			}
		}
		push @rows, "$k|$open->[0]|$open->[1]|" if $open;
	}
	return join("\n", @rows);
}

my $scd1_sql = 'SELECT k, v FROM %s ORDER BY k';
my $scd2_sql = 'SELECT k, v, __start_at, __end_at FROM %s ORDER BY k, __start_at';

# the SCD 1 target t1 also holds the backfill's keys the feed never wrote
sub model_t1
{
	my %feed = map { (split /\|/)[0] => $_ } split /\n/, model_scd1();
	my %seen = map { $_->[0] => 1 } @events;
	for my $x ([ 1, 'x1' ], [ 2, 'x2' ], [ 99, 'x99' ])
	{
		$feed{ $x->[0] } = "$x->[0]|$x->[1]" unless $seen{ $x->[0] };
	}
	return join("\n", map { $feed{$_} } sort { $a <=> $b } keys %feed);
}

sub check_targets
{
	my ($when) = @_;
	ok( $node->poll_query_until('postgres', sprintf($scd1_sql, 't1'), model_t1()),
		"t1 (SCD 1 and a once backfill, worker) equals the model $when");
	ok($node->poll_query_until('postgres', sprintf($scd2_sql, 't2'), model_scd2()),
		"t2 (SCD 2, worker) equals the model $when");
	ok($node->poll_query_until('postgres', sprintf($scd2_sql, 't3'), model_scd2()),
		"t3 (statement form, worker) equals the model $when");
	$node->safe_psql('postgres', q{SELECT * FROM autocdc.run_flow('r1')});
	is($node->safe_psql('postgres', sprintf($scd1_sql, 'r1')), model_scd1(),
		"r1 (SCD 1, run_flow) equals the model $when");
}

write_events(60);
check_targets('at 0.1');
upgrade_snapshot_step($node, 1, 'at 0.1');

# 0.1 let a feed become unlogged under its flow: its inserts then reach no WAL
$node->safe_psql('postgres', q{
	CREATE TABLE ufeed (k int, seq int);
	SELECT autocdc.create_flow('u1', 'ufeed', '{k}', 'seq', continuous => false);
	INSERT INTO ufeed VALUES (1, 1);
	SELECT * FROM autocdc.run_flow('u1');
	ALTER TABLE ufeed SET UNLOGGED;
	INSERT INTO ufeed VALUES (2, 2);
});

# events the 0.1 library never applies: the worker is off meanwhile
stop_autocdc_worker($node);
write_events(30);
$node->stop;

# --- the current library, before ALTER EXTENSION UPDATE ------------------------
new_library_before_update($node, $src, $inst, $tmp, '0.1', 'r1', sub { write_events(20) });
my ($ret, $out, $err) = $node->psql('postgres',
	q{SELECT autocdc.create_flow('t9', 'feed', '{k}', 'seq')});
like($err, qr/ALTER EXTENSION autocdc UPDATE/, 'create_flow refuses too');
is($node->safe_psql('postgres', q{SELECT count(*) FROM autocdc.flows}), '8',
	'autocdc.flows (0.1) still answers');
my $unapplied = $node->safe_psql('postgres', q{
	SELECT sum(num_events) FROM autocdc.flows WHERE name = 't2'});
is($unapplied, 60, 'nothing written since the 0.1 library stopped is applied yet');

is($node->safe_psql('postgres', q{SELECT source FROM autocdc.flows WHERE name = 't3'}), 'stream(feed)',
	'0.1 showed a statement-made flow\'s source with stream()');

# --- the update ------------------------------------------------------------------
$node->safe_psql('postgres', 'ALTER EXTENSION autocdc UPDATE');
is($node->safe_psql('postgres', q{SELECT source FROM autocdc.flows WHERE name = 't3'}), 'feed',
	'after the update it shows the source as the function form does');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'autocdc'}),
	'0.3', 'the extension is at 0.3');
write_events(25);
check_targets('after the update');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(name || '=' || num_events, ',' ORDER BY name) FROM autocdc.flows
		 WHERE name IN ('t1', 't2', 't3', 'r1', 'backfill')}),
	join(',', 'backfill=3', map { "$_=" . scalar(@events) } qw(r1 t1 t2 t3)),
	'every event was applied exactly once by each flow (num_events)');
# (the worker may be applying a flow right now: running, for a moment)
ok($node->poll_query_until('postgres', q{SELECT count(*) FROM autocdc.flows WHERE state <> 'idle' AND name <> 'u1'}, '0'),
	'every flow is idle')
  or diag($node->safe_psql('postgres', q{SELECT name, state, last_error FROM autocdc.flows}));

# the feed made unlogged under 0.1 stops its flow instead of skipping rows
($ret, $out, $err) = $node->psql('postgres', q{SELECT * FROM autocdc.run_flow('u1')});
like($err, qr/flow "u1": table "ufeed" of its source is not a logged table/,
	'a flow whose feed became unlogged fails');
like($err, qr/SET LOGGED\), then run SELECT autocdc\.full_refresh\('u1'\)/, '... with the way out');
$node->safe_psql('postgres', q{ALTER TABLE ufeed SET LOGGED; SELECT * FROM autocdc.full_refresh('u1')});
is($node->safe_psql('postgres', 'SELECT string_agg(k::text, \',\' ORDER BY k) FROM u1'), '1,2',
	'after SET LOGGED and full_refresh the flow has every row');

upgrade_snapshot_step($node, 2, 'after the update');

# --- the upgraded catalog equals a fresh one ----------------------------------------
same_objects_as_fresh($node, 'an upgraded database');

$node->stop;
done_testing();
