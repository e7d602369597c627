# 063_snapshot_mix_property.pl — randomized property test of a snapshot flow
# and a change flow writing one SCD 1 target (semantics §6), against an
# independent Perl model of the fold (semantics §4).
#
# Each sequence is a random script: change events (upserts and deletes of a
# few keys, with random sequences: in order, late, equal to a snapshot's
# version) inserted into a feed in transactions; snapshots (random row sets
# at increasing bigint versions, handed out by a version function, one or
# more per run); runs of either flow in a random interleaving; sometimes
# the snapshot flow runs alone first and the change flow joins later; and at
# the end a full_refresh of one of the two flows.  The model knows only the
# definition: every event has a sequence and an arrival position (a change
# event: its transaction's commit, or the change flow's first run, which
# reads the feed under a snapshot; a snapshot: its run); a snapshot at v is
# a truncate at v then an upsert at v of each row; of the events of a key
# with one sequence only the last to arrive exists; a key is present iff
# its last event is an upsert.  Half the sequences set an expectation that
# drops the upserts of value 'd' when the change flow is created: such a
# change event never arrives; such a snapshot row is no upsert, and the
# snapshot's truncate spares its key.  A change flow joining a target the
# snapshot flow wrote alone rebases it: a truncate at the last version and
# an upsert at it of each current row.  After every run the target must equal the
# fold of the events applied so far, and the run's metrics (num_events,
# num_upserted_rows, num_deleted_rows) the model's comparison of the target
# before and after by key (for a run that applies several snapshots: the
# sum over them, each compared with the target before it).  A full_refresh forgets arrival: the snapshots
# are applied again, then the change events read again arrive after them
# (a snapshot flow that has applied no snapshot has no target yet: its
# refresh changes nothing).
#
# Run just this file (as the postgres OS user, from a copy of the
# repository, extension installed):
#     make installcheck REGRESS= PROVE_TESTS=test/t/063_snapshot_mix_property.pl
# More sequences, or another seed:
#     AUTOCDC_MIX_SEQUENCES=500 AUTOCDC_MIX_SEED=7 make installcheck ...
# (AUTOCDC_PROPERTY_SEED, which test/run-tests.sh passes through, is the
# default seed.)  On a failure the test prints the seed and the script that
# reproduces it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

sub env_or
{
	my ($name, $default) = @_;
	return length($ENV{$name} // '') ? $ENV{$name} : $default;
}
my $seed = env_or('AUTOCDC_MIX_SEED', env_or('AUTOCDC_PROPERTY_SEED', 42));
my $nseq = env_or('AUTOCDC_MIX_SEQUENCES', 40);
die "AUTOCDC_MIX_SEQUENCES must be a positive integer" unless $nseq =~ /^\d+$/ && $nseq > 0;
srand($seed);
note "seed $seed, $nseq sequences";

my @VALS = (undef, 'a', 'b', 'c', 'd');
my $NKEYS = 6;

sub lit { return defined $_[0] ? "'$_[0]'" : 'NULL'; }

############################################################################
# The model: events { key (undef for a truncate), seq, arr, up (1: upsert),
# val }; arrival positions are (counter, order) pairs compared in turn.
############################################################################

sub later
{
	my ($x, $y) = @_;    # is event x after event y in (seq, arrival)?
	return $x->{seq} <=> $y->{seq} || $x->{arr} <=> $y->{arr} || $x->{ord} <=> $y->{ord};
}

# The target (key => val) that the applied events fold to (a truncate's
# spare: the keys it does not apply to).
sub fold
{
	my ($events) = @_;
	my %last;
	my @truncs = grep { !defined $_->{key} } @$events;
	for my $k (1 .. $NKEYS)
	{
		my $best;
		for my $e ((grep { !$_->{spare}{$k} } @truncs),
			grep { defined $_->{key} && $_->{key} == $k } @$events)
		{
			$best = $e if !$best || later($e, $best) > 0;
		}
		$last{$k} = $best if $best && $best->{up};
	}
	return { map { $_ => $last{$_}{val} } keys %last };
}

sub metrics
{
	my ($before, $after) = @_;
	my ($up, $del) = (0, 0);
	for my $k (keys %$after)
	{
		$up++ if !exists $before->{$k}
		  || (defined $before->{$k} xor defined $after->{$k})
		  || (defined $after->{$k} && $before->{$k} ne $after->{$k});
	}
	$del += !exists $after->{$_} for keys %$before;
	return ($up, $del);
}

sub render
{
	my ($t) = @_;
	return join(' ', map { "$_=" . ($t->{$_} // 'NULL') } sort { $a <=> $b } keys %$t);
}

############################################################################
# One random sequence: the script and what the model expects of it.
############################################################################

sub gen_sequence
{
	my ($id) = @_;
	my $sql = "CREATE TABLE feed_$id (k int, val text, seq bigint, op text);\n"
	  . "CREATE TABLE vl_$id (snapshot regclass, version bigint, avail boolean DEFAULT false);\n"
	  . "CREATE FUNCTION vf_$id(last bigint) RETURNS TABLE (snapshot regclass, version bigint)\n"
	  . "  LANGUAGE sql AS \$\$ SELECT v.snapshot, v.version FROM public.vl_$id v\n"
	  . "    WHERE v.avail AND (last IS NULL OR v.version > last) ORDER BY v.version LIMIT "
	  . (1 + int rand 2) . " \$\$;\n"
	  . "SELECT autocdc.create_snapshot_flow('t_$id', NULL, '{k}', source_function => 'vf_$id(bigint)',"
	  . " name => 's_$id') \\g /dev/null\n";
	my $cdc_sql = "SELECT autocdc.create_flow('t_$id', 'feed_$id', '{k}', sequence_by => 'seq',"
	  . " apply_as_deletes => \$\$op = 'd'\$\$, except_column_list => '{seq,op}', name => 'c_$id')"
	  . " \\g /dev/null\n";
	my $expect = rand() < 0.5;
	$cdc_sql .= "SELECT autocdc.set_expectation('t_$id', 'no_d', \$\$val <> 'd'\$\$, 'drop') \\g /dev/null\n"
	  if $expect;
	my $cdc_first = rand() < 0.5;
	$sql .= $cdc_sql if $cdc_first;
	my $have_cdc = $cdc_first;

	my (@applied, @pending_changes, @pending_snaps, @snaps, @want);
	my ($arr, $lastv, $nsnap, $cdc_ran, $prevsnap) = (0, 0, 0, 0, undef);
	my @feed;    # every change event in insertion order (for the refresh)
	my $target = {};
	my $target_exists = $cdc_first;

	my $nsteps = 8 + int rand 14;
	my $prefix = 1 + int rand 4;
	for my $step (1 .. $nsteps)
	{
		my $r = rand;
		# joining after a few snapshot runs: the target's state becomes the
		# fold of the last snapshot
		if (!$have_cdc && $step > $prefix)
		{
			$sql .= $cdc_sql;
			$have_cdc = 1;
			$target_exists = 1;
			@applied = rebase($target, $lastv, $arr) if @snaps;
			next;
		}
		if ($have_cdc && $r < 0.3)
		{
			# a transaction inserting change events
			$arr++;
			my @rows;
			for my $o (1 .. 1 + int rand 3)
			{
				my $e = { key => 1 + int rand $NKEYS, arr => $arr, ord => $o,
					up => rand() < 0.75 ? 1 : 0, val => $VALS[ int rand @VALS ] };
				$e->{dropped} = $expect && $e->{up} && ($e->{val} // '') eq 'd';
				# sequences around the snapshots' versions: late, equal, later
				my $s = rand;
				$e->{seq} = $s < 0.15 && $lastv > 0 ? 1 + int rand $lastv
				  : $s < 0.3 && $lastv > 0 ? $lastv - int rand 3
				  : $s < 0.45 ? $lastv + 1 + int rand 3
				  : $lastv + int rand 6;
				$e->{seq} = 1 if $e->{seq} < 1;
				$e->{val} = undef unless $e->{up};
				push @rows, "($e->{key}, " . lit($e->{val}) . ", $e->{seq}, '" . ($e->{up} ? 'u' : 'd') . "')";
				push @pending_changes, $e;
				push @feed, $e;
			}
			$sql .= "INSERT INTO feed_$id VALUES " . join(', ', @rows) . ";\n";
		}
		elsif ($have_cdc && $r < 0.6)
		{
			my $before = $target;
			unless ($cdc_ran++)
			{
				# the first run reads the feed under a snapshot: its rows
				# arrive then, in the feed's order
				$arr++;
				my $o = 0;
				$_->{arr} = $arr, $_->{ord} = ++$o for @pending_changes;
			}
			push @applied, grep { !$_->{dropped} } @pending_changes;
			my $n = grep { !$_->{dropped} } @pending_changes;
			@pending_changes = ();
			$target = fold(\@applied);
			my ($u, $d) = metrics($before, $target);
			$sql .= "SELECT 'RUN:' || num_events || ',' || num_upserted_rows || ',' || num_deleted_rows"
			  . " FROM autocdc.run_flow('c_$id');\n" . target_sql($id, $target_exists);
			push @want, "$n,$u,$d", render($target);
		}
		else
		{
			# make 0-2 snapshots available, then run the snapshot flow
			for (1 .. int rand 3)
			{
				my $v = $lastv + int rand 4;
				$v = $lastv + 1 if $v <= $lastv;
				$lastv = $v;
				my %rows;
				for my $k (1 .. $NKEYS)
				{
					# rows often carried over unchanged from the snapshot before
					if ($prevsnap && exists $prevsnap->{$k} && rand() < 0.6)
					{
						$rows{$k} = $prevsnap->{$k};
					}
					elsif (rand() < 0.5)
					{
						$rows{$k} = $VALS[ int rand @VALS ];
					}
				}
				$prevsnap = \%rows;
				my $name = "s${id}_" . $nsnap++;
				$sql .= "CREATE TABLE $name (k int, val text);\n";
				$sql .= "INSERT INTO $name VALUES "
				  . join(', ', map { "($_, " . lit($rows{$_}) . ')' } sort keys %rows) . ";\n"
				  if %rows;
				$sql .= "INSERT INTO vl_$id VALUES ('$name', $v, true);\n";
				push @pending_snaps, { v => $v, rows => \%rows };
			}
			# each snapshot of the run is applied (and counted) in turn
			my ($n, $u, $d) = (0, 0, 0);
			for my $s (@pending_snaps)
			{
				my $before = $target;
				$arr++;
				push @applied, snapshot_events($s, $arr, $expect && $have_cdc);
				push @snaps, $s;
				$n += keys %{ $s->{rows} };
				$target = fold(\@applied);
				my ($su, $sd) = metrics($before, $target);
				$u += $su;
				$d += $sd;
			}
			$target_exists ||= @pending_snaps > 0;
			@pending_snaps = ();
			$sql .= "SELECT 'RUN:' || num_events || ',' || num_upserted_rows || ',' || num_deleted_rows"
			  . " FROM autocdc.run_flow('s_$id');\n" . target_sql($id, $target_exists);
			push @want, "$n,$u,$d", render($target);
		}
	}
	$sql .= $cdc_sql unless $have_cdc;

	# full_refresh of either flow: the snapshots again, then the feed
	my @events;
	$arr = 0;
	push @events, snapshot_events($_, ++$arr, $expect) for @snaps;
	$arr++;
	my $o = 0;
	push @events, { %$_, arr => $arr, ord => ++$o } for grep { !$_->{dropped} } @feed;
	my $which = rand() < 0.5 ? 's' : 'c';
	# (a snapshot flow that has applied no snapshot has no target yet: its
	# refresh leaves the change flow's target alone)
	$target = fold(\@events) if $which eq 'c' || @snaps;
	$sql .= "SELECT 'RUN:refresh' FROM autocdc.full_refresh('${which}_$id');\n"
	  . target_sql($id, 1);
	push @want, 'refresh', render($target);

	$sql .= "SELECT autocdc.drop_flow('c_$id') \\g /dev/null\n"
	  . "SELECT autocdc.drop_flow('s_$id', true) \\g /dev/null\n"
	  . "DROP FUNCTION vf_$id(bigint);\nDROP TABLE feed_$id, vl_$id"
	  . join('', map { ", s${id}_$_" } 0 .. $nsnap - 1) . ";\n";
	return ($sql, join("\n", @want));
}

# A snapshot's events; with drop, its rows of value 'd' spare their keys
# from its truncate instead of being upserts.
sub snapshot_events
{
	my ($s, $arr, $drop) = @_;
	my $r = $s->{rows};
	my @d = $drop ? grep { ($r->{$_} // '') eq 'd' } keys %$r : ();
	return ({ key => undef, seq => $s->{v}, arr => $arr, ord => 0, up => 0,
			spare => { map { $_ => 1 } @d } },
		map { { key => $_, seq => $s->{v}, arr => $arr, ord => 1, up => 1, val => $r->{$_} } }
		  grep { !$drop || ($r->{$_} // '') ne 'd' } keys %$r);
}

# The events a change flow joining the target starts from: a truncate at
# the last version, then an upsert at it of each row of the target.
sub rebase
{
	my ($target, $v, $arr) = @_;
	return ({ key => undef, seq => $v, arr => $arr, ord => 0, up => 0 },
		map { { key => $_, seq => $v, arr => $arr, ord => 1, up => 1, val => $target->{$_} } }
		  keys %$target);
}

sub target_sql
{
	my ($id, $exists) = @_;
	return "SELECT '';\n" unless $exists;
	return "SELECT coalesce(string_agg(k || '=' || coalesce(val, 'NULL'), ' ' ORDER BY k), '') FROM t_$id;\n";
}

############################################################################
# The cluster.
############################################################################

my $node = autocdc_node('snapshot_mix_property');
$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');

my $nfail = 0;
for my $id (1 .. $nseq)
{
	my ($sql, $want) = gen_sequence($id);
	my ($out, $err, $timed_out) = ('', '', 0);
	$node->psql('postgres', $sql, stdout => \$out, stderr => \$err, on_error_stop => 0,
		timeout => $PostgreSQL::Test::Utils::timeout_default, timed_out => \$timed_out);
	$err .= "\n(psql timed out)" if $timed_out;
	my $got = join("\n", map { s/^RUN://r } split /\n/, $out, -1);
	$got =~ s/\n+\z//;
	$want =~ s/\n+\z//;    # (an empty target last)
	my $pass = is($got, $want, "sequence $id: target and metrics after every run equal the model");
	$pass &&= unlike($err, qr/ERROR|FATAL|PANIC|timed out/, "sequence $id: no errors");
	next if $pass;
	$nfail++;
	diag "FAILED: seed $seed, sequence $id\npsql stderr:\n$err\n"
	  . "reproducing script (after CREATE EXTENSION autocdc):\n$sql";
}
diag "seed $seed: $nfail of $nseq sequences failed" if $nfail;

is($node->safe_psql('postgres',
		"SELECT count(*) FROM autocdc.flow UNION ALL SELECT count(*) FROM pg_class "
		  . "WHERE relnamespace = 'autocdc_state'::regnamespace AND relkind = 'r'"),
	"0\n0", 'all flows and hidden state dropped');

$node->stop;
done_testing();
