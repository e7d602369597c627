# 060_snapshot_property.pl — randomized property test of snapshot flows
# (semantics §6) against an independent Perl model.
#
# Each "sequence" is a random list of successive snapshots of a few keys
# (rows carried over unchanged, changed in one column, removed, added back;
# values include NULLs, so identical and NULL-equal rows are common).  The
# model keeps the target from the text of docs/semantics.md directly — SCD 1: the last
# snapshot; SCD 2: per key an open version that a snapshot keeps (tracked
# columns equal; untracked ones change in place), closes and reopens (a
# tracked column differs), or closes (the key vanished) — and computes each
# run's metrics by comparing the target before and after by row identity.
# It never sees events, hidden state or the engine's fold.
#
# Modes: a version function (SCD 1, SCD 2, SCD 2 tracking a random subset),
# whose snapshots become available a few at a time and which hands out at
# most m of them per call, in random order (so one run applies several
# snapshots over several calls); and a table source (SCD 1 and SCD 2 with a
# subset), one snapshot per run, the version being the run's transaction
# time, sometimes with a second run in the same transaction (which must
# apply nothing).  After every run: num_events, num_upserted_rows and
# num_deleted_rows must equal the model's; after the last run the target
# must equal the model row for row.
#
# Run just this file (as the postgres OS user, from a copy of the
# repository, extension installed):
#     make installcheck REGRESS= PROVE_TESTS=test/t/060_snapshot_property.pl
# Run thousands of sequences (the count is per mode; there are 5 modes), or
# another seed:
#     AUTOCDC_SNAPSHOT_SEQUENCES=2000 AUTOCDC_SNAPSHOT_SEED=7 \
#         make installcheck REGRESS= PROVE_TESTS=test/t/060_snapshot_property.pl
# (AUTOCDC_PROPERTY_SEED, which test/run-tests.sh passes through, is the
# default seed.)  On a failure the test prints the seed, the snapshots, the
# runs, the script that reproduces it, and the expected and actual results.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;
use Time::HiRes qw(time);

sub env_or
{
	my ($name, $default) = @_;
	return length($ENV{$name} // '') ? $ENV{$name} : $default;
}
my $seed = env_or('AUTOCDC_SNAPSHOT_SEED', env_or('AUTOCDC_PROPERTY_SEED', 42));
my $per_mode = env_or('AUTOCDC_SNAPSHOT_SEQUENCES', 30);
die "AUTOCDC_SNAPSHOT_SEQUENCES must be a positive integer"
  unless $per_mode =~ /^\d+$/ && $per_mode > 0;
srand($seed);
note "seed $seed, $per_mode sequences per mode";

# Snapshot columns: k (the key), a int, b text, c int.
my @COLS = qw(a b c);

my @MODES = (
	{ name => 'function SCD 1',          fn => 1, scd => 1 },
	{ name => 'function SCD 2',          fn => 1, scd => 2 },
	{ name => 'function SCD 2 tracking', fn => 1, scd => 2, subset => 1 },
	{ name => 'table SCD 1',             fn => 0, scd => 1 },
	{ name => 'table SCD 2 tracking',    fn => 0, scd => 2, subset => 1 });

############################################################################
# The model.  A snapshot is { key => [a, b, c] }.  A target is
# { identity => [k, a, b, c, start, end] } (identity: k for SCD 1, "k@start"
# for SCD 2).
############################################################################

sub same
{
	my ($x, $y) = @_;
	return !defined $x && !defined $y || defined $x && defined $y && $x eq $y;
}

# Apply one snapshot at version v to a target (in place).
sub model_apply
{
	my ($target, $snap, $v, $scd, $tracked) = @_;
	if ($scd == 1)
	{
		%$target = map { $_ => [ $_, @{ $snap->{$_} } ] } keys %$snap;
		return;
	}
	my %open;
	for my $id (keys %$target)
	{
		my $r = $target->{$id};
		$open{ $r->[0] } = $id unless defined $r->[5];
	}
	for my $k (keys %open)
	{
		$target->{ $open{$k} }[5] = $v unless exists $snap->{$k};
	}
	for my $k (keys %$snap)
	{
		my $row = $snap->{$k};
		if (my $id = $open{$k})
		{
			my $cur = $target->{$id};
			my $same = 1;
			for my $i (0 .. $#COLS)
			{
				$same = 0
				  if (grep { $_ eq $COLS[$i] } @$tracked)
				  && !same($cur->[ 1 + $i ], $row->[$i]);
			}
			if ($same)
			{
				@$cur[ 1 .. 3 ] = @$row;    # untracked columns change in place
				next;
			}
			$cur->[5] = $v;
		}
		$target->{"$k\@$v"} = [ $k, @$row, $v, undef ];
	}
}

# Metrics of a change of target: identities added or changed, and removed.
sub model_metrics
{
	my ($before, $after) = @_;
	my ($up, $del) = (0, 0);
	for my $id (keys %$after)
	{
		if (!exists $before->{$id}) { $up++; next; }
		my ($x, $y) = ($before->{$id}, $after->{$id});
		$up++ if grep { !same($x->[$_], $y->[$_]) } 0 .. 5;
	}
	for my $id (keys %$before) { $del++ unless exists $after->{$id}; }
	return ($up, $del);
}

sub copy_target { my ($t) = @_; return { map { $_ => [ @{ $t->{$_} } ] } keys %$t }; }

# One line per row, ordered by key and start: k|a|'b'|c[|start|end].
sub render
{
	my ($target, $scd) = @_;
	my @rows = sort { $a->[0] <=> $b->[0] || ($a->[4] // 0) <=> ($b->[4] // 0) } values %$target;
	return join("\n",
		map {
			my $r = $_;
			join('|', $r->[0], $r->[1] // 'NULL', defined $r->[2] ? "'$r->[2]'" : 'NULL',
				$r->[3] // 'NULL', $scd == 2 ? ($r->[4], $r->[5] // 'NULL') : ())
		} @rows);
}

# Sanity of the model: semantics §8 examples 5 (the city in b) and 7 (tracking
# in a, nontracking in b).
{
	my $v1 = { 1 => 'Oaxaca', 2 => 'Monterrey', 3 => 'Tijuana' };
	my $v2 = { 2 => 'Carmel', 3 => 'Los Angeles', 4 => 'Death Valley' };
	my %t5;
	model_apply(\%t5, { map { $_ => [ undef, $v1->{$_}, undef ] } keys %$v1 }, 1, 2, \@COLS);
	model_apply(\%t5, { map { $_ => [ undef, $v2->{$_}, undef ] } keys %$v2 }, 2, 2, \@COLS);
	is(render(\%t5, 2),
		join("\n", "1|NULL|'Oaxaca'|NULL|1|2", "2|NULL|'Monterrey'|NULL|1|2",
			"2|NULL|'Carmel'|NULL|2|NULL", "3|NULL|'Tijuana'|NULL|1|2",
			"3|NULL|'Los Angeles'|NULL|2|NULL", "4|NULL|'Death Valley'|NULL|2|NULL"),
		'model: example 5');
	my %t7;
	model_apply(\%t7, { 1 => [ 'a1', 'b1', undef ], 2 => [ 'a2', 'b2', undef ], 4 => [ 'a4', 'b4', undef ] },
		1, 2, ['a']);
	model_apply(\%t7, { 2 => [ 'a2_new', 'b2', undef ], 3 => [ 'a3', 'b3', undef ], 4 => [ 'a4', 'b4_new', undef ] },
		2, 2, ['a']);
	is(render(\%t7, 2),
		join("\n", "1|a1|'b1'|NULL|1|2", "2|a2|'b2'|NULL|1|2", "2|a2_new|'b2'|NULL|2|NULL",
			"3|a3|'b3'|NULL|2|NULL", "4|a4|'b4_new'|NULL|1|NULL"),
		'model: example 7');
}

############################################################################
# Random sequences.
############################################################################

sub pick { return $_[ int rand @_ ]; }

sub gen_value
{
	my ($i) = @_;
	return undef if rand() < 0.2;
	return $i == 1 ? pick(qw(x y z)) : int rand 3;
}

# Successive snapshots over keys 1..nkeys.
sub gen_snapshots
{
	my $nkeys = 1 + int rand 6;
	my $n = 1 + int rand 6;
	my (@snaps, %prev);
	for (1 .. $n)
	{
		my %s;
		for my $k (1 .. $nkeys)
		{
			my $r = rand;
			next if $r < 0.2;    # absent from this snapshot
			if ($prev{$k} && $r < 0.6)
			{
				$s{$k} = [ @{ $prev{$k} } ];    # unchanged
			}
			elsif ($prev{$k} && $r < 0.85)
			{
				my @row = @{ $prev{$k} };
				my $i = int rand 3;
				$row[$i] = gen_value($i);        # one column (maybe to an equal value)
				$s{$k} = \@row;
			}
			elsif (rand() < 0.15)
			{
				$s{$k} = [ undef, undef, undef ];    # all NULL: equal to NULLs only
			}
			else
			{
				$s{$k} = [ map { gen_value($_) } 0 .. 2 ];
			}
		}
		push @snaps, \%s;
		%prev = %s;
	}
	return \@snaps;
}

sub sql_lit
{
	my ($v, $quote) = @_;
	return 'NULL' unless defined $v;
	return $quote ? "'$v'" : $v;
}

sub snapshot_values
{
	my ($s) = @_;
	my @keys = sort { $a <=> $b } keys %$s;
	# rows in a random order
	for (my $i = @keys - 1; $i > 0; $i--)
	{
		my $j = int rand($i + 1);
		@keys[ $i, $j ] = @keys[ $j, $i ];
	}
	return join(', ',
		map { "($_, " . sql_lit($s->{$_}[0]) . ', ' . sql_lit($s->{$_}[1], 1) . ', ' . sql_lit($s->{$_}[2]) . ')' }
		  @keys);
}

sub flow_options
{
	my ($mode, $tracked) = @_;
	my $o = $mode->{scd} == 2 ? ", stored_as_scd_type => '2'" : '';
	$o .= ", track_history_column_list => '{" . join(',', @$tracked) . "}'"
	  if $mode->{subset};
	return $o;
}

my $RENDER = "'ROW:' || k || '|' || coalesce(a::text, 'NULL') || '|' || coalesce(quote_literal(b), 'NULL')"
  . " || '|' || coalesce(c::text, 'NULL')";
my $RUN = "SELECT 'RUN:' || num_events || ',' || num_upserted_rows || ',' || num_deleted_rows";

# The script of a version-function sequence: every snapshot a table, made
# available to the function a group at a time, a run after each group.
sub function_sql
{
	my ($id, $mode, $tracked, $snaps, $groups, $m) = @_;
	my @versions;
	my $v = 0;
	push @versions, ($v += 1 + int rand 3) for @$snaps;
	my $sql = '';
	for my $i (0 .. $#$snaps)
	{
		$sql .= "CREATE TABLE s${id}_$i (k int, a int, b text, c int);\n";
		$sql .= "INSERT INTO s${id}_$i VALUES " . snapshot_values($snaps->[$i]) . ";\n"
		  if %{ $snaps->[$i] };
	}
	$sql .= "CREATE TABLE vl_$id (snapshot regclass, version int, avail boolean DEFAULT false);\n";
	$sql .= "INSERT INTO vl_$id VALUES "
	  . join(', ', map { "('s${id}_$_', $versions[$_], false)" } 0 .. $#$snaps) . ";\n";
	$sql .= "CREATE FUNCTION vf_$id(last int) RETURNS TABLE (snapshot regclass, version int)\n"
	  . "  LANGUAGE sql AS \$\$ SELECT * FROM (SELECT v.snapshot, v.version FROM public.vl_$id v\n"
	  . "    WHERE v.avail AND (last IS NULL OR v.version > last) ORDER BY v.version LIMIT $m) x\n"
	  . "    ORDER BY random() \$\$;\n";
	$sql .= "SELECT autocdc.create_snapshot_flow('t_$id', NULL, '{k}'" . flow_options($mode, $tracked)
	  . ", source_function => 'vf_$id(int)', name => 'f_$id') \\g /dev/null\n";
	my $n = 0;
	for my $g (@$groups)
	{
		if ($g > 0)
		{
			$n += $g;
			$sql .= "UPDATE vl_$id SET avail = true WHERE version <= $versions[$n - 1];\n";
		}
		$sql .= "$RUN FROM autocdc.run_flow('f_$id');\n";
	}
	$sql .= "SELECT $RENDER"
	  . ($mode->{scd} == 2 ? " || '|' || __start_at || '|' || coalesce(__end_at::text, 'NULL')" : '')
	  . " FROM t_$id ORDER BY k" . ($mode->{scd} == 2 ? ', __start_at' : '') . ";\n";
	return ($sql, \@versions);
}

# The script of a table-source sequence: the table holds one snapshot at a
# time, each run in a transaction of its own (sometimes twice).
sub table_sql
{
	my ($id, $mode, $tracked, $snaps, $twice) = @_;
	my $sql = "CREATE TABLE src_$id (k int, a int, b text, c int);\n"
	  . "CREATE TABLE runs_$id (n int, t timestamptz);\n"
	  . "SELECT autocdc.create_snapshot_flow('t_$id', 'src_$id', '{k}'" . flow_options($mode, $tracked)
	  . ", name => 'f_$id') \\g /dev/null\n";
	for my $i (0 .. $#$snaps)
	{
		$sql .= "BEGIN;\nDELETE FROM src_$id;\n";
		$sql .= "INSERT INTO src_$id VALUES " . snapshot_values($snaps->[$i]) . ";\n"
		  if %{ $snaps->[$i] };
		$sql .= "COMMIT;\nBEGIN;\nINSERT INTO runs_$id VALUES (" . ($i + 1) . ", now());\n";
		$sql .= "$RUN FROM autocdc.run_flow('f_$id');\n";
		$sql .= "$RUN FROM autocdc.run_flow('f_$id');\n" if $twice->[$i];
		$sql .= "COMMIT;\n";
	}
	$sql .= "SELECT $RENDER"
	  . ($mode->{scd} == 2
		? " || '|' || s.n || '|' || coalesce(e.n::text, 'NULL') FROM t_$id"
		  . " JOIN runs_$id s ON s.t = __start_at LEFT JOIN runs_$id e ON e.t = __end_at ORDER BY k, s.n;\n"
		: " FROM t_$id ORDER BY k;\n");
	return $sql;
}

sub cleanup_sql
{
	my ($id, $mode, $nsnaps) = @_;
	my $sql = "SELECT autocdc.drop_flow('f_$id', true) \\g /dev/null\n";
	if ($mode->{fn})
	{
		$sql .= "DROP FUNCTION vf_$id(int);\nDROP TABLE vl_$id;\n";
		$sql .= "DROP TABLE s${id}_$_;\n" for 0 .. $nsnaps - 1;
	}
	else
	{
		$sql .= "DROP TABLE src_$id, runs_$id;\n";
	}
	return $sql;
}

sub describe
{
	my ($snaps, $versions) = @_;
	my @out;
	for my $i (0 .. $#$snaps)
	{
		my $s = $snaps->[$i];
		push @out,
		  sprintf("  #%d%s: %s", $i, $versions ? " (version $versions->[$i])" : '',
			join(' ', map { "$_=(" . join(',', map { $_ // 'NULL' } @{ $s->{$_} }) . ')' }
				  sort { $a <=> $b } keys %$s) || '(empty)');
	}
	return join("\n", @out);
}

############################################################################
# The cluster.
############################################################################

my $node = autocdc_node('snapshot_property');
$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');

my $t0 = time;
my $id = 0;
my $nfail = 0;
for my $mode (@MODES)
{
	my $mt0 = time;
	my ($ok, $nsnaps_total) = (0, 0);
	for my $s (1 .. $per_mode)
	{
		$id++;
		my $snaps = gen_snapshots();
		my $tracked = [@COLS];
		$tracked = pick([qw(a)], [qw(b)], [qw(a b)], [qw(b c)], [qw(a c)]) if $mode->{subset};
		$nsnaps_total += @$snaps;

		my ($sql, $versions, @groups, @twice);
		my $m = 1 + int rand 3;
		if ($mode->{fn})
		{
			# groups of snapshots made available before each run (0: a run
			# with nothing new)
			my $left = @$snaps;
			while ($left > 0)
			{
				my $g = rand() < 0.15 ? 0 : 1 + int rand $left;
				push @groups, $g;
				$left -= $g;
			}
			push @groups, 0;
			($sql, $versions) = function_sql($id, $mode, $tracked, $snaps, \@groups, $m);
		}
		else
		{
			@twice = map { rand() < 0.3 ? 1 : 0 } @$snaps;
			$sql = table_sql($id, $mode, $tracked, $snaps, \@twice);
		}

		# the model, run by run
		my %target;
		my @want_runs;
		if ($mode->{fn})
		{
			my $n = 0;
			for my $g (@groups)
			{
				my ($ev, $up, $del) = (0, 0, 0);
				for my $i ($n .. $n + $g - 1)
				{
					my $before = copy_target(\%target);
					model_apply(\%target, $snaps->[$i], $versions->[$i], $mode->{scd}, $tracked);
					my ($u, $d) = model_metrics($before, \%target);
					$ev += keys %{ $snaps->[$i] };
					$up += $u;
					$del += $d;
				}
				$n += $g;
				push @want_runs, "$ev,$up,$del";
			}
		}
		else
		{
			for my $i (0 .. $#$snaps)
			{
				my $before = copy_target(\%target);
				model_apply(\%target, $snaps->[$i], $i + 1, $mode->{scd}, $tracked);
				my ($u, $d) = model_metrics($before, \%target);
				push @want_runs, scalar(keys %{ $snaps->[$i] }) . ",$u,$d";
				push @want_runs, "0,0,0" if $twice[$i];
			}
		}
		my $want_rows = render(\%target, $mode->{scd});
		my $want_runs = join(' ', @want_runs);

		my ($out, $err, $timed_out) = ('', '', 0);
		$node->psql('postgres', $sql . cleanup_sql($id, $mode, scalar @$snaps),
			stdout => \$out, stderr => \$err, on_error_stop => 0,
			timeout => $PostgreSQL::Test::Utils::timeout_default,
			timed_out => \$timed_out);
		$err .= "\n(psql timed out)" if $timed_out;
		my @lines = split /\n/, $out;
		my $got_rows = join("\n", map { /^ROW:(.*)/ ? $1 : () } @lines);
		my $got_runs = join(' ', map { /^RUN:(.*)/ ? $1 : () } @lines);

		my $name = "$mode->{name} sequence $s (id $id, " . scalar(@$snaps) . " snapshots)";
		my $pass = is($got_rows, $want_rows, "$name: target equals the model");
		$pass &= is($got_runs, $want_runs, "$name: metrics per run");
		$pass &= unlike($err, qr/ERROR|FATAL|PANIC|timed out/, "$name: no errors");
		if ($pass)
		{
			$ok++;
			next;
		}
		$nfail++;
		diag "FAILED: seed $seed, mode $mode->{name}, sequence $s (id $id)"
		  . ($mode->{subset} ? ", tracked {@$tracked}" : '') . "\n"
		  . "snapshots:\n" . describe($snaps, $versions) . "\n"
		  . ($mode->{fn}
			? "snapshots made available before each run: @groups; at most $m per call\n"
			: "second run in the same transaction after snapshot: @twice\n")
		  . "psql stderr:\n$err"
		  . "\nreproducing script (after CREATE EXTENSION autocdc):\n$sql";
	}
	note sprintf("mode %s: %d/%d sequences ok, %d snapshots, %.1f s",
		$mode->{name}, $ok, $per_mode, $nsnaps_total, time - $mt0);
}
note sprintf("%d sequences in %.1f s", $id, time - $t0);
diag "seed $seed: $nfail of $id sequences failed" if $nfail;

# Nothing left behind: every sequence dropped its flow and its hidden state.
is($node->safe_psql('postgres',
		"SELECT count(*) FROM autocdc.flow UNION ALL SELECT count(*) FROM pg_class "
		  . "WHERE relnamespace = 'autocdc_state'::regnamespace AND relkind = 'r'"),
	"0\n0", 'all flows and hidden state dropped');

$node->stop;
done_testing();
