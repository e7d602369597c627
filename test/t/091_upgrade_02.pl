
# The upgrade from autocdc 0.2 (the release at commit ffd282d, the last
# commit before 0.3 was opened): flows of every kind 0.2 has run on a server
# with the 0.2 library — feeds into SCD 1, SCD 2 and bitemporal targets,
# ignore_null_updates, a once backfill, changes() into SCD 1 and SCD 2,
# snapshot flows of a table and of a version function, a statement-made
# flow; continuous ones applied by the worker, others by run_flow.  Then the
# current library is installed and the server restarted with events 0.2
# never applied; until ALTER EXTENSION autocdc UPDATE nothing is applied
# (the worker says so once, run_flow refuses with the hint); after it,
# applying continues where 0.2 stopped, every event exactly once: each
# target equals a model of all events written in this file, computed here
# independently of the engine, and each flow's num_events equals the
# events written.  Finally a database upgraded from 0.2 (by
# autocdc--0.2--0.3.sql alone) and one created fresh hold the same
# extension objects.
#
# The 0.2 library is built from that commit's tree into a private copy of
# the PostgreSQL installation (AutocdcTest's old_autocdc_installation).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $old_commit = 'ffd282d';
my $src = $ENV{TESTDIR} // '.';

if (system("git -C '$src' cat-file -e '$old_commit^{commit}' >/dev/null 2>&1") != 0)
{
	plan skip_all =>
	  "this checkout has no commit $old_commit (autocdc 0.2, a shallow clone or no .git): the upgrade from 0.2 cannot be built";
}

# 0.2 was built and tested on PostgreSQL 15, 17 and 18
my ($major) = pg_config('version') =~ /^PostgreSQL (\d+)/;
if (!grep { $_ == $major } (15, 17, 18))
{
	plan skip_all =>
	  "autocdc 0.2 supports PostgreSQL 15, 17 and 18, not $major: there is no 0.2 installation on PostgreSQL $major to upgrade from";
}

# --- a private PostgreSQL installation with the 0.2 library ----------------
my $tmp = PostgreSQL::Test::Utils::tempdir;
my ($install_path, $inst) = old_autocdc_installation($src, $old_commit, $tmp);
my $node = autocdc_node('upgrade02', worker => 1, install_path => $install_path,
	conf => ["autocdc.naptime = '100ms'", "autocdc.snapshot_interval = '1s'", 'jit = off']);

is($node->safe_psql('postgres', q{CREATE EXTENSION autocdc;
	SELECT extversion FROM pg_extension WHERE extname = 'autocdc'}), '0.2', 'the extension is at 0.2');

# --- flows of every 0.2 kind ------------------------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE feed (k int, v text, seq int, op text, sys int);
	CREATE TABLE extract (k int, v text, seq int, op text, sys int);
	INSERT INTO extract VALUES (1, 'x1', 0, 'U', 0), (2, 'x2', 0, 'U', 0), (99, 'x99', 0, 'U', 0);
	-- continuous SCD 1 and SCD 2 flows of a feed, applied by the worker
	SELECT autocdc.create_flow('t1', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op, sys}');
	SELECT autocdc.create_flow('t2', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op, sys}', stored_as_scd_type => '2');
	-- a once backfill into the SCD 1 target
	SELECT autocdc.create_flow('t1', 'extract', '{k}', 'seq', once => true, name => 'backfill',
							   except_column_list => '{seq, op, sys}');
	-- applied by run_flow only: ignore_null_updates, and a bitemporal target
	SELECT autocdc.create_flow('r1', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op, sys}', ignore_null_updates => true,
							   continuous => false);
	SELECT autocdc.create_flow('bt', 'feed', '{k}', 'seq', apply_as_deletes => 'op = ''D''',
							   except_column_list => '{seq, op, sys}', stored_as_scd_type => 'bitemporal',
							   system_sequence_by => 'sys', continuous => false);
	-- the history of a table: SCD 1 by the worker, SCD 2 by run_flow
	CREATE TABLE src (id int PRIMARY KEY, w text);
	SELECT autocdc.create_flow('c1', 'changes(src)', '{id}');
	SELECT autocdc.create_flow('c2', 'changes(src)', '{id}', stored_as_scd_type => '2',
							   continuous => false);
});
upgrade_snapshot_flows($node);
# the first reads of the changes() flows, of the empty table: every change
# is then decoded, once
$node->safe_psql('postgres', q{SELECT * FROM autocdc.run_flow('c1')});
$node->safe_psql('postgres', q{SELECT * FROM autocdc.run_flow('c2')});
# the statement form
$node->safe_psql('postgres', q{
	DO LANGUAGE autocdc $$
	CREATE FLOW t3 AS AUTO CDC INTO t3 FROM stream(feed) KEYS (k)
	APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (seq, op, sys) STORED AS SCD TYPE 2;
	$$;
});

# --- feed events and their model ---------------------------------------------
# Arrival order is the order written here (one statement per transaction);
# sys, the bitemporal flow's system sequence, is the arrival number.
my @events;
my $seq = 0;
srand(20261205);

sub write_events
{
	my ($n) = @_;
	my @rows;
	for (1 .. $n)
	{
		my $k = 1 + int(rand(10));
		# mostly increasing, some late (older) and some equal sequences
		my $s = $seq + int(rand(6)) - 3;
		$seq += 2;
		my $op = rand() < 0.15 ? 'D' : 'U';
		my $v = rand() < 0.15 ? undef : "v$k-" . int(rand(1000));
		my $sys = @events + 1;
		push @events, [ $k, $v, $s, $op, $sys ];
		push @rows, sprintf("(%d, %s, %d, '%s', %d)", $k, defined $v ? "'$v'" : 'NULL', $s, $op, $sys);
	}
	while (my @chunk = splice(@rows, 0, 7))
	{
		$node->safe_psql('postgres', 'INSERT INTO feed VALUES ' . join(', ', @chunk));
	}
}

# psql's text of a value
sub txt { return defined $_[0] ? $_[0] : '' }

# two values are the same (NULL equals NULL)
sub same { return (defined $_[0] ? "=$_[0]" : 'NULL') eq (defined $_[1] ? "=$_[1]" : 'NULL') }

# events of one key in (sequence, arrival) order, ties settled: last arrival wins
sub settled
{
	my (@evs) = @_;
	my %by = map { $_->[2] => $_ } @evs;
	return map { $by{$_} } sort { $a <=> $b } keys %by;
}

# the events of each key, in arrival order
sub by_key
{
	my ($upto) = @_;
	my %by;
	push @{ $by{ $_->[0] } }, $_ for grep { $_->[4] <= $upto } @events;
	return map { [ $_, $by{$_} ] } sort { $a <=> $b } keys %by;
}

# SCD 1 (with ignore_null_updates: the last non-NULL value since the last delete)
sub model_scd1
{
	my ($ignore_nulls) = @_;
	my @rows;
	for my $ke (by_key(scalar @events))
	{
		my ($k, $evs) = @$ke;
		my ($present, $v) = (0, undef);
		for my $e (settled(@$evs))
		{
			if ($e->[3] eq 'D') { ($present, $v) = (0, undef); next; }
			$present = 1;
			$v = $e->[1] if defined $e->[1] || !$ignore_nulls;
		}
		push @rows, "$k|" . txt($v) if $present;
	}
	return join("\n", @rows);
}

# SCD 2 versions of one key's events: [v, start, end]
sub scd2_versions
{
	my (@evs) = @_;
	my (@out, $open);
	for my $e (settled(@evs))
	{
		my (undef, $v, $s, $op) = @$e;
		if ($op eq 'D')
		{
			push @out, [ @$open, $s ] if $open;
			undef $open;
		}
		elsif (!$open || !same($open->[0], $v))
		{
			push @out, [ @$open, $s ] if $open;
			$open = [ $v, $s ];
		}
	}
	push @out, [ @$open, undef ] if $open;
	return @out;
}

sub model_scd2
{
	my @rows;
	for my $ke (by_key(scalar @events))
	{
		my ($k, $evs) = @$ke;
		push @rows, map { join('|', $k, txt($_->[0]), $_->[1], txt($_->[2])) } scd2_versions(@$evs);
	}
	return join("\n", @rows);
}

# Bitemporal: the belief after each of a key's events (system times are
# arrival numbers, increasing) is the SCD 2 result of its events so far; a
# row per version and maximal run of system times in which it is believed.
sub model_bitemporal
{
	my @rows;
	for my $ke (by_key(scalar @events))
	{
		my ($k, $evs) = @$ke;
		my (%open, %version);
		for my $i (0 .. $#$evs)
		{
			my $t = $evs->[$i][4];
			my %belief;
			for my $x (scd2_versions(@$evs[ 0 .. $i ]))
			{
				my $id = join('|', $k, txt($x->[0]), $x->[1], txt($x->[2]));
				$belief{$id} = 1;
				$version{$id} = [ $k, $x->[1], $id ];
			}
			for my $id (grep { !$belief{$_} } keys %open)
			{
				push @rows, [ @{ $version{$id} }, delete $open{$id}, $t ];
			}
			$open{$_} //= $t for keys %belief;
		}
		push @rows, [ @{ $version{$_} }, $open{$_}, undef ] for keys %open;
	}
	# [k, __start_at, "k|v|__start_at|__end_at", __system_start_at, __system_end_at]
	return join("\n",
		map { "$_->[2]|$_->[3]|" . txt($_->[4]) }
		sort { $a->[0] <=> $b->[0] or $a->[1] <=> $b->[1] or $a->[3] <=> $b->[3] } @rows);
}

# --- changes to the table of the changes() flows, and its model ---------------
my %src;
my $num_changes = 0;

sub change_src
{
	my ($n) = @_;
	for (1 .. $n)
	{
		my $id = 1 + int(rand(15));
		my $w = "w$id-" . int(rand(1000));
		my $sql;
		if (!exists $src{$id}) { $sql = "INSERT INTO src VALUES ($id, '$w')"; $src{$id} = $w; }
		elsif (rand() < 0.25) { $sql = "DELETE FROM src WHERE id = $id"; delete $src{$id}; }
		else { $sql = "UPDATE src SET w = '$w' WHERE id = $id"; $src{$id} = $w; }
		$node->safe_psql('postgres', $sql);
		$num_changes++;
	}
}

sub model_src
{
	return join("\n", map { "$_|$src{$_}" } sort { $a <=> $b } keys %src);
}

my $scd1_sql = 'SELECT k, v FROM %s ORDER BY k';
my $scd2_sql = 'SELECT k, v, __start_at, __end_at FROM %s ORDER BY k, __start_at';
my $bt_sql = 'SELECT k, v, __start_at, __end_at, __system_start_at, __system_end_at FROM bt
			   ORDER BY k, __start_at, __system_start_at';

# the SCD 1 target t1 also holds the backfill's keys the feed never wrote
sub model_t1
{
	my %feed = map { (split /\|/)[0] => $_ } split /\n/, model_scd1(0);
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
	ok($node->poll_query_until('postgres', sprintf($scd1_sql, 't1'), model_t1()),
		"t1 (SCD 1 and a once backfill, worker) equals the model $when");
	ok($node->poll_query_until('postgres', sprintf($scd2_sql, 't2'), model_scd2()),
		"t2 (SCD 2, worker) equals the model $when");
	ok($node->poll_query_until('postgres', sprintf($scd2_sql, 't3'), model_scd2()),
		"t3 (statement form, worker) equals the model $when");
	ok($node->poll_query_until('postgres', 'SELECT id, w FROM c1 ORDER BY id', model_src()),
		"c1 (changes(), SCD 1, worker) equals the table $when");
	$node->safe_psql('postgres', q{
		SELECT * FROM autocdc.run_flow('r1');
		SELECT * FROM autocdc.run_flow('bt');
		SELECT * FROM autocdc.run_flow('c2');
	});
	is($node->safe_psql('postgres', sprintf($scd1_sql, 'r1')), model_scd1(1),
		"r1 (SCD 1 ignoring NULLs, run_flow) equals the model $when");
	is($node->safe_psql('postgres', $bt_sql), model_bitemporal(),
		"bt (bitemporal, run_flow) equals the model $when");
	is($node->safe_psql('postgres', 'SELECT id, w FROM c2 WHERE __end_at IS NULL ORDER BY id'),
		model_src(), "c2 (changes(), SCD 2, run_flow): its current rows equal the table $when");
}

# every flow of the feed, and the changes() flows, read every event once
sub check_counts
{
	my ($when) = @_;
	my $n = scalar @events;
	ok( $node->poll_query_until('postgres', q{
			SELECT string_agg(name || '=' || num_events, ',' ORDER BY name) FROM autocdc.flows
			 WHERE name IN ('backfill', 'bt', 'c1', 'c2', 'r1', 't1', 't2', 't3')},
			join(',', 'backfill=3', "bt=$n", "c1=$num_changes", "c2=$num_changes", "r1=$n", "t1=$n", "t2=$n", "t3=$n")),
		"every event was applied exactly once by each flow (num_events) $when")
	  or diag($node->safe_psql('postgres', q{SELECT name, num_events FROM autocdc.flows ORDER BY name}));
}

write_events(60);
change_src(30);
check_targets('at 0.2');
check_counts('at 0.2');
upgrade_snapshot_step($node, 1, 'at 0.2');

# events the 0.2 library never applies: the worker is off meanwhile
stop_autocdc_worker($node);
write_events(30);
change_src(15);
$node->stop;

# --- the current library, before ALTER EXTENSION UPDATE ------------------------
new_library_before_update($node, $src, $inst, $tmp, '0.2', 'r1', sub { write_events(20) });
is($node->safe_psql('postgres', q{SELECT sum(num_events) FROM autocdc.flows WHERE name = 't2'}), 60,
	'nothing written since the 0.2 library stopped is applied yet');

# --- the update ------------------------------------------------------------------
$node->safe_psql('postgres', 'ALTER EXTENSION autocdc UPDATE');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'autocdc'}),
	'0.3', 'the extension is at 0.3');
write_events(25);
change_src(15);
check_targets('after the update');
check_counts('after the update');
# the targets 0.2 made keep the GiST index of their periods that 0.2 gave
# every SCD 2 and bitemporal target; 0.3 makes it on request only
is($node->safe_psql('postgres', q{
	SELECT string_agg(indrelid::regclass::text, ',' ORDER BY indrelid::regclass::text COLLATE "C")
	  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	 WHERE c.relam = (SELECT oid FROM pg_am WHERE amname = 'gist')}),
	'bt,c2,s1,t2,t3', 'the SCD 2 and bitemporal targets of 0.2 keep their index of the periods');
ok($node->poll_query_until('postgres', q{SELECT count(*) FROM autocdc.flows WHERE state <> 'idle'}, '0'),
	'every flow is idle')
  or diag($node->safe_psql('postgres', q{SELECT name, state, last_error FROM autocdc.flows}));

upgrade_snapshot_step($node, 2, 'after the update');

# --- the upgraded catalog equals a fresh one ----------------------------------------
same_objects_as_fresh($node, 'a database upgraded from 0.2');

$node->stop;
done_testing();
