# 015_bitemporal_property.pl — randomized property test of bitemporal flows
# (stored_as_scd_type => 'bitemporal'): the engine against a small,
# independent Perl model of the definition.
#
# The definition modelled: __start_at/__end_at are business time (sequence_by),
# __system_start_at/__system_end_at system time (system_sequence_by).  The
# belief at system time t of a key is the SCD 2 result (the flow's tracking
# and ignore-null rules, truncates as deletes of every key) of the key's
# events whose system sequence is <= t, in business-sequence order; of several
# such events with equal business sequence only the one latest in (system
# sequence, arrival) exists.  The target holds, per key, one row for every
# business version (values, __start_at, __end_at) and every maximal run of
# consecutive system times at which that version is in the belief:
# __system_start_at is the run's first system time, __system_end_at the first
# later system time at which the version is no longer believed (NULL while it
# still is).  The system times are the distinct system sequences of the
# flow's events.
#
# Phases:
#  1. model self-test (plain Perl): the worked example (one event per run,
#     target after every run), plus model-internal consistency checks over
#     random streams (the belief at the last system time of a stream whose
#     system sequence strictly increases with arrival equals a plain SCD 2
#     fold; the result does not depend on arrival order when no two events
#     share (business, system) sequence).
#  2. deterministic engine checks: the worked example through the engine,
#     one event per run; the target's column types; a NULL system sequence
#     fails the run and applies nothing.
#  3. random streams per mode (plain, ignore_null_updates, tracked subset,
#     both): events inserted in random runs (transactions of INSERTs),
#     run_flow after every run; the target after EVERY run must equal the
#     model of the events inserted so far, and num_events per run the rows
#     inserted since the previous run; after the last run, autocdc.as_of
#     equals its definition (a plain query of the target) at even business
#     times and every system time at which a belief begins, before the
#     first, and for the current belief.  Each target is, at random, made
#     by create_flow (then given as_of's index) or made before it as a
#     partitioned table (by hash of the key, by range of __start_at or of
#     __system_start_at).
#  4. arrival order: the same events (no two sharing (business, system)
#     sequence) fed in a shuffled order, with another run split, into a
#     second flow: both targets equal the model.
#
# Run just this file (as the postgres OS user, from a copy of the repository,
# extension installed):
#     make installcheck REGRESS= PROVE_TESTS=test/t/015_bitemporal_property.pl
# More streams (per mode; 4 modes + 4 shuffled modes at half the count), or
# another seed:
#     AUTOCDC_PROPERTY_STREAMS=500 AUTOCDC_PROPERTY_SEED=7 make installcheck ...
# The default (40 streams per mode, 323 flows, seed 42) takes about 60-100 s
# on a 2-core machine; 200 per mode about 5 minutes.
# (test/run-tests.sh passes both variables through.)
# Only the model self-test, without PostgreSQL:
#     AUTOCDC_MODEL_ONLY=1 perl test/t/015_bitemporal_property.pl
# On a failure the test prints the seed, the stream's events, the run split,
# the SQL script that reproduces it, and expected and actual target rows.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time);
use List::Util qw(shuffle);

BEGIN
{
	unless ($ENV{AUTOCDC_MODEL_ONLY})
	{
		require PostgreSQL::Test::Cluster;
		require PostgreSQL::Test::Utils;
		require AutocdcTest;
		AutocdcTest->import;
	}
}

# empty variables (as test/run-tests.sh passes them when unset) mean "default"
my $seed = length($ENV{AUTOCDC_PROPERTY_SEED} // '') ? $ENV{AUTOCDC_PROPERTY_SEED} : 42;
my $streams_per_mode =
  length($ENV{AUTOCDC_PROPERTY_STREAMS} // '') ? $ENV{AUTOCDC_PROPERTY_STREAMS} : 40;
die "AUTOCDC_PROPERTY_STREAMS must be a positive integer"
  unless $streams_per_mode =~ /^\d+$/ && $streams_per_mode > 0;
my $shuffle_streams_per_mode = int(($streams_per_mode + 1) / 2);
# AUTOCDC_PROPERTY_CITUS=1: into Citus-distributed targets (property_node)
my $citus = $ENV{AUTOCDC_PROPERTY_CITUS};
srand($seed);
note "seed $seed, $streams_per_mode streams per mode";

# Data columns of the feed (besides k, op, bt, st).  Target columns: k, a, b,
# c, __start_at, __end_at, __system_start_at, __system_end_at.
my @COLS = qw(a b c);

############################################################################
# The model.  Events are hashes {k, a, b, c, op, bt, st} in arrival order.
# Classification: truncate iff op = 'T', else delete iff op = 'D', else upsert
# (op NULL makes both conditions NULL, i.e. false: an upsert).  Sequences are
# compared with $CMP (numbers by default; the worked example uses
# zero-padded 'HH:MM:SS' text).
############################################################################

our $CMP = sub { $_[0] <=> $_[1] };

sub kind_of
{
	my ($e) = @_;
	return 'T' if defined $e->{op} && $e->{op} eq 'T';
	return 'D' if defined $e->{op} && $e->{op} eq 'D';
	return 'U';
}

# Keys that appear in the stream (a truncate's key is ignored).
sub stream_keys
{
	my ($events) = @_;
	my %k;
	$k{ $_->{k} } = 1 for grep { kind_of($_) ne 'T' } @$events;
	return sort { $a <=> $b } keys %k;
}

# All events of one key: its own and every truncate (as a delete of the key),
# each with its arrival position.
sub key_events
{
	my ($events, $key) = @_;
	my @ev;
	for my $pos (0 .. $#$events)
	{
		my $e = $events->[$pos];
		my $kind = kind_of($e);
		if ($kind eq 'T')
		{
			push @ev, { kind => 'D', bt => $e->{bt}, st => $e->{st}, pos => $pos };
		}
		elsif ($e->{k} == $key)
		{
			push @ev, {
				kind => $kind, bt => $e->{bt}, st => $e->{st}, pos => $pos,
				vals => { map { $_ => $e->{$_} } @COLS } };
		}
	}
	return @ev;
}

sub same_value
{
	my ($x, $y) = @_;    # IS NOT DISTINCT FROM on text
	return !defined $x && !defined $y
	  || defined $x && defined $y && $x eq $y;
}

# The belief at system time $t: [ [vals, start, end], ... ] in start order.
sub belief
{
	my ($kev, $t, $ignore_nulls, $tracked) = @_;
	# events known at t; of equal business sequence the latest in (st, arrival)
	my %at_bt;
	for my $e (grep { $CMP->($_->{st}, $t) <= 0 } @$kev)
	{
		my $o = $at_bt{ $e->{bt} };
		$at_bt{ $e->{bt} } = $e
		  if !$o
		  || $CMP->($e->{st}, $o->{st}) > 0
		  || $CMP->($e->{st}, $o->{st}) == 0 && $e->{pos} > $o->{pos};
	}
	my @ev = map { $at_bt{$_} } sort { $CMP->($a, $b) } keys %at_bt;
	# SCD 2 walk
	my ($open, @versions);
	for my $e (@ev)
	{
		if ($e->{kind} eq 'D')
		{
			push @versions, [ $open->{vals}, $open->{start}, $e->{bt} ] if $open;
			undef $open;
			next;
		}
		my %v = %{ $e->{vals} };
		if ($ignore_nulls && $open)
		{
			for my $c (@COLS)
			{
				$v{$c} = $open->{vals}{$c} unless defined $v{$c};
			}
		}
		if (!$open)
		{
			$open = { start => $e->{bt}, vals => \%v };
		}
		elsif (!grep { !same_value($open->{vals}{$_}, $v{$_}) } @$tracked)
		{
			$open->{vals} = \%v;    # keep start, untracked change in place
		}
		else
		{
			push @versions, [ $open->{vals}, $open->{start}, $e->{bt} ];
			$open = { start => $e->{bt}, vals => \%v };
		}
	}
	push @versions, [ $open->{vals}, $open->{start}, undef ] if $open;
	return @versions;
}

sub version_id
{
	my ($v) = @_;
	return join("\x1f",
		map { defined $_ ? "=$_" : 'N' } (map { $v->[0]{$_} } @COLS), $v->[1], $v->[2]);
}

sub system_times
{
	my ($events) = @_;
	my %t = map { $_->{st} => 1 } @$events;
	return sort { $CMP->($a, $b) } keys %t;
}

# Target rows [k, a, b, c, start, end, system_start, system_end].
sub model_bitemporal
{
	my ($events, $ignore_nulls, $tracked) = @_;
	my @times = system_times($events);
	my @rows;
	for my $k (stream_keys($events))
	{
		my @kev = key_events($events, $k);
		my %believed;    # version id -> [version, since]
		for my $t (@times)
		{
			my %now = map { version_id($_) => $_ } belief(\@kev, $t, $ignore_nulls, $tracked);
			for my $id (grep { !$now{$_} } sort keys %believed)
			{
				my ($v, $since) = @{ delete $believed{$id} };
				push @rows, [ $k, (map { $v->[0]{$_} } @COLS), $v->[1], $v->[2], $since, $t ];
			}
			$believed{$_} //= [ $now{$_}, $t ] for keys %now;
		}
		for my $id (sort keys %believed)
		{
			my ($v, $since) = @{ $believed{$id} };
			push @rows, [ $k, (map { $v->[0]{$_} } @COLS), $v->[1], $v->[2], $since, undef ];
		}
	}
	return @rows;
}

# Canonical text: one line per row, text values quoted, NULL as NULL, lines
# sorted (by Perl, on both sides).  The SQL side renders the target the same
# way (quote_nullable / coalesce).
sub render
{
	my @lines;
	for my $r (@_)
	{
		push @lines, join('|',
			$r->[0],
			(map { defined $_ ? "'$_'" : 'NULL' } @$r[ 1 .. 3 ]),
			(map { defined $_ ? $_ : 'NULL' } @$r[ 4 .. 7 ]));
	}
	return join("\n", sort @lines);
}

sub sort_lines { return join("\n", sort grep { length } @_); }

############################################################################
# Model self-test 1: the worked example (company A -> k 1, data_point -> a;
# one event per run, the target after every run).
############################################################################

my @EXAMPLE = (
	{ k => 1, a => 'XFv1', b => undef, c => undef, op => 'I', bt => '10:01:00', st => '10:05:00' },
	{ k => 1, a => 'XFv2', b => undef, c => undef, op => 'U', bt => '12:15:43', st => '12:20:00' },
	{ k => 1, a => 'XFv3', b => undef, c => undef, op => 'U', bt => '12:05:00', st => '12:25:00' },
	{ k => 1, a => 'XFv2', b => undef, c => undef, op => 'D', bt => '12:30:00', st => '12:30:00' });
my @EXAMPLE_AFTER = (
	sort_lines("1|'XFv1'|NULL|NULL|10:01:00|NULL|10:05:00|NULL"),
	sort_lines(
		"1|'XFv1'|NULL|NULL|10:01:00|NULL|10:05:00|12:20:00",
		"1|'XFv1'|NULL|NULL|10:01:00|12:15:43|12:20:00|NULL",
		"1|'XFv2'|NULL|NULL|12:15:43|NULL|12:20:00|NULL"),
	undef,    # not given by the definition's example
	sort_lines(
		"1|'XFv1'|NULL|NULL|10:01:00|NULL|10:05:00|12:20:00",
		"1|'XFv1'|NULL|NULL|10:01:00|12:15:43|12:20:00|12:25:00",
		"1|'XFv1'|NULL|NULL|10:01:00|12:05:00|12:25:00|NULL",
		"1|'XFv3'|NULL|NULL|12:05:00|12:15:43|12:25:00|NULL",
		"1|'XFv2'|NULL|NULL|12:15:43|NULL|12:20:00|12:30:00",
		"1|'XFv2'|NULL|NULL|12:15:43|12:30:00|12:30:00|NULL"));
{
	local $CMP = sub { $_[0] cmp $_[1] };
	for my $n (1 .. 4)
	{
		next unless defined $EXAMPLE_AFTER[ $n - 1 ];
		my @prefix = @EXAMPLE[ 0 .. $n - 1 ];
		for my $mode ([ 0, [@COLS] ], [ 1, [@COLS] ], [ 0, ['a'] ], [ 1, ['a'] ])
		{
			is(render(model_bitemporal(\@prefix, @$mode)), $EXAMPLE_AFTER[ $n - 1 ],
				"model: worked example after run $n (ignore_nulls $mode->[0], tracked {@{$mode->[1]}})");
		}
	}
	# arrival order does not matter (no two events share (bt, st))
	my @order = (3, 1, 0, 2);
	is(render(model_bitemporal([ @EXAMPLE[@order] ], 0, [@COLS])), $EXAMPLE_AFTER[3],
		'model: worked example in another arrival order');
}

# Small hand-made cases of the tie rule and of truncates.
{
	my $ev = sub {
		my ($k, $a, $op, $bt, $st) = @_;
		return { k => $k, a => $a, b => undef, c => undef, op => $op, bt => $bt, st => $st };
	};
	# equal bt, the later system sequence wins although it arrived first
	is(render(model_bitemporal([ $ev->(1, 'x2', 'U', 5, 3), $ev->(1, 'x1', 'U', 5, 2) ], 0, [@COLS])),
		sort_lines("1|'x1'|NULL|NULL|5|NULL|2|3", "1|'x2'|NULL|NULL|5|NULL|3|NULL"),
		'model: equal business sequence, the later system sequence wins');
	# equal (bt, st): the later arrival wins
	is(render(model_bitemporal([ $ev->(1, 'x1', 'U', 5, 2), $ev->(1, 'x2', 'U', 5, 2) ], 0, [@COLS])),
		"1|'x2'|NULL|NULL|5|NULL|2|NULL",
		'model: equal (business, system) sequence, the later arrival wins');
	# a truncate closes keys also first seen later, and only from its system time on
	is(render(model_bitemporal([ $ev->(undef, undef, 'T', 4, 3), $ev->(2, 'y', 'U', 1, 1) ], 0, [@COLS])),
		sort_lines("2|'y'|NULL|NULL|1|NULL|1|3", "2|'y'|NULL|NULL|1|4|3|NULL"),
		'model: a truncate deletes a key first seen later, from its system time on');
	# a version believed, not believed, believed again: two rows
	is(render(model_bitemporal([ $ev->(1, 'x', 'U', 1, 1), $ev->(1, 'y', 'U', 1, 2), $ev->(1, 'x', 'U', 1, 3) ], 0, [@COLS])),
		sort_lines("1|'x'|NULL|NULL|1|NULL|1|2", "1|'y'|NULL|NULL|1|NULL|2|3", "1|'x'|NULL|NULL|1|NULL|3|NULL"),
		'model: a version believed again is a second row');
	# ignore_null_updates fills from the version open in the belief: a late
	# event re-derives the filled value
	my @e3 = ($ev->(1, 'x', 'U', 1, 1), $ev->(1, undef, 'U', 3, 2), $ev->(1, 'y', 'U', 2, 3));
	$e3[1]{b} = 'b1';
	is(render(model_bitemporal(\@e3, 1, [@COLS])),
		sort_lines(
			"1|'x'|NULL|NULL|1|NULL|1|2", "1|'x'|NULL|NULL|1|3|2|3", "1|'x'|'b1'|NULL|3|NULL|2|3",
			"1|'x'|NULL|NULL|1|2|3|NULL", "1|'y'|NULL|NULL|2|3|3|NULL", "1|'y'|'b1'|NULL|3|NULL|3|NULL"),
		'model: ignore_null_updates fills from the version open in the belief at each system time');
	is(render(model_bitemporal(\@e3, 0, [qw(b)])),
		sort_lines(
			"1|'x'|NULL|NULL|1|NULL|1|2", "1|'x'|NULL|NULL|1|3|2|3", "1|'y'|NULL|NULL|1|3|3|NULL",
			"1|NULL|'b1'|NULL|3|NULL|2|NULL"),
		'model: tracked {b}: a late update of a changes the version in place (a new row of it)');
}

############################################################################
# Random streams.
############################################################################

sub pick { return $_[ int rand @_ ]; }

# $unique: no two events share (bt, st) (so the result may not depend on
# arrival order at all).
sub gen_stream
{
	my ($unique) = @_;
	my $nkeys   = 1 + int rand 4;      # keys 1..nkeys
	my $maxbt   = 2 + int rand 7;      # business sequences 1..maxbt
	my $maxst   = 1 + int rand 6;      # system sequences 1..maxst
	my $n       = 1 + int rand 20;     # events
	$n = $maxbt * $maxst if $unique && $n > $maxbt * $maxst;
	my $p_trunc = rand() < 0.3 ? 0 : rand 0.2;
	my $p_del   = rand 0.35;
	my $p_null  = 0.1 + rand 0.5;
	my $nvals   = 1 + int rand 3;      # few distinct values: tracked columns often equal
	# system sequence along arrival: random, nondecreasing, or nondecreasing
	# with some late events
	my $st_mode = pick('random', 'random', 'increasing', 'late');
	my $p_late  = rand 0.4;
	my $val = sub {
		my ($c) = @_;
		return rand() < $p_null ? undef : $c . (1 + int rand $nvals);
	};
	my @pairs = shuffle(map { my $bt = $_; map { [ $bt, $_ ] } 1 .. $maxst } 1 .. $maxbt);
	my $cur_st = 1;
	my @events;
	for (1 .. $n)
	{
		my ($bt, $st);
		if ($unique)
		{
			($bt, $st) = @{ shift @pairs };
		}
		else
		{
			$bt = 1 + int rand $maxbt;
			if ($st_mode eq 'random')
			{
				$st = 1 + int rand $maxst;
			}
			else
			{
				$cur_st += int rand 2;
				$st = $st_mode eq 'late' && rand() < $p_late ? 1 + int rand $cur_st : $cur_st;
			}
		}
		my $r = rand;
		my %e = (bt => $bt, st => $st, map { $_ => $val->($_) } @COLS);
		if ($r < $p_trunc)
		{
			# the truncate's key and values are ignored: mostly NULL, sometimes not
			%e = (%e, op => 'T', k => rand() < 0.7 ? undef : 1 + int rand $nkeys);
		}
		elsif ($r < $p_trunc + $p_del)
		{
			%e = (%e, op => 'D', k => 1 + int rand $nkeys);
		}
		else
		{
			%e = (%e, op => pick('U', 'I', undef), k => 1 + int rand $nkeys);
		}
		push @events, \%e;
	}
	if ($unique && $st_mode ne 'random')
	{
		# arrival in system order (ties in random order), to be shuffled later
		@events = sort { $a->{st} <=> $b->{st} } @events;
	}
	return \@events;
}

# Split event indexes 0..n-1 into runs -> transactions -> statements.
sub gen_plan
{
	my ($n) = @_;
	my $nruns = 1 + int rand(rand() < 0.2 ? 1 : 7);
	my @cuts = sort { $a <=> $b } map { int rand($n + 1) } 1 .. $nruns - 1;
	my @runs;
	my $from = 0;
	for my $to (@cuts, $n)
	{
		my @idx = ($from .. $to - 1);    # may be empty: a run with nothing new
		$from = $to;
		my @txns;
		while (@idx)
		{
			my @t = splice(@idx, 0, 1 + int rand @idx);
			my @stmts;
			while (@t)
			{
				push @stmts,
				  [ splice(@t, 0, rand() < 0.5 ? scalar @t : 1 + int rand @t) ];
			}
			push @txns, \@stmts;
		}
		push @runs, \@txns;
	}
	return \@runs;
}

sub plan_counts
{
	my ($plan) = @_;
	return map { my $n = 0; $n += @$_ for map { @$_ } @$_; $n } @$plan;
}

sub describe_plan
{
	my ($plan) = @_;
	return join(' ; ',
		map { '[' . join(' ', map { '{' . join(' ', map { '(' . join(',', @$_) . ')' } @$_) . '}' } @$_) . ']' } @$plan);
}

sub describe_events
{
	my ($events) = @_;
	my $i = 0;
	return join("\n",
		map {
			sprintf("  #%-2d k=%-4s a=%-4s b=%-4s c=%-4s op=%-4s bt=%-2s st=%s",
				$i++, map({ $_ // 'NULL' } @$_{qw(k a b c op bt st)}))
		} @$events);
}

############################################################################
# Model self-test 2: internal consistency over random streams.
############################################################################

# A plain SCD 2 fold (semantics §4, ties: last arrival wins), for comparison.
sub model_scd2_final
{
	my ($events, $ignore_nulls, $tracked) = @_;
	my @rows;
	for my $k (stream_keys($events))
	{
		# with st strictly increasing along arrival, "latest in (st, arrival)"
		# is "last to arrive": belief() at the last time is the SCD 2 fold
		my @kev = key_events($events, $k);
		my %at;
		$at{ $_->{bt} } = $_ for @kev;
		my ($open, @v);
		for my $e (map { $at{$_} } sort { $a <=> $b } keys %at)
		{
			if ($e->{kind} eq 'D') { push @v, [ $open->{vals}, $open->{start}, $e->{bt} ] if $open; undef $open; next; }
			my %x = %{ $e->{vals} };
			if ($ignore_nulls && $open) { defined $x{$_} or $x{$_} = $open->{vals}{$_} for @COLS; }
			if ($open && !grep { !same_value($open->{vals}{$_}, $x{$_}) } @$tracked) { $open->{vals} = \%x; next; }
			push @v, [ $open->{vals}, $open->{start}, $e->{bt} ] if $open;
			$open = { start => $e->{bt}, vals => \%x };
		}
		push @v, [ $open->{vals}, $open->{start}, undef ] if $open;
		push @rows, map { my $ver = $_; [ $k, (map { $ver->[0]{$_} } @COLS), $ver->[1], $ver->[2] ] } @v;
	}
	return @rows;
}

sub render_current
{
	# the rows of a bitemporal result still believed, without system columns
	my @lines = map { my $r = $_; join('|', map { $_ // 'NULL' } @$r[ 0 .. 5 ]) }
	  grep { !defined $_->[7] } @_;
	return join("\n", sort @lines);
}

{
	my ($n_cur, $n_order, $n_mono) = (0, 0, 0);
	for my $i (1 .. 300)
	{
		my $ignore = $i % 2;
		my $tracked = pick([@COLS], [qw(a)], [qw(b)], [qw(a b)]);
		# strictly increasing system sequence along arrival
		my $ev = gen_stream(0);
		my $st = 0;
		$_->{st} = ($st += 1 + int rand 2) for @$ev;
		my @bi = model_bitemporal($ev, $ignore, $tracked);
		$n_cur++ if render_current(@bi) eq render_current(map { [ @$_, undef, undef ] } model_scd2_final($ev, $ignore, $tracked));
		# each row's system interval is non-empty, and the rows believed at
		# one system time never overlap in business time
		my $okmono = 1;
		for my $r (@bi)
		{
			$okmono = 0 if defined $r->[7] && $r->[7] <= $r->[6];
		}
		$n_mono += $okmono;
		# arrival order does not matter without (bt, st) ties
		my $u = gen_stream(1);
		$n_order++
		  if render(model_bitemporal($u, $ignore, $tracked))
		  eq render(model_bitemporal([ shuffle @$u ], $ignore, $tracked));
	}
	is($n_cur, 300, 'model: with system sequence increasing along arrival, the current belief is the SCD 2 fold');
	is($n_mono, 300, 'model: every system interval is non-empty');
	is($n_order, 300, 'model: without (bt, st) ties arrival order does not matter');
}

if ($ENV{AUTOCDC_MODEL_ONLY})
{
	done_testing();
	exit 0;
}

############################################################################
# SQL.
############################################################################

sub sql_lit
{
	my ($v) = @_;
	return defined $v ? "'$v'" : 'NULL';
}

sub sql_row
{
	my ($e) = @_;
	return '('
	  . join(', ',
		defined $e->{k} ? $e->{k} : 'NULL',
		(map { sql_lit($e->{$_}) } @COLS),
		sql_lit($e->{op}),
		map { !defined $e->{$_} ? 'NULL' : $e->{$_} =~ /^\d+$/ ? $e->{$_} : "'$e->{$_}'" } qw(bt st))
	  . ')';
}

# The target made before the flow as a partitioned table of kind $tkind:
# by hash of the key, by range of __start_at or of __system_start_at
# (plain: none, create_flow makes an ordinary one).
sub partitioned_sql
{
	my ($target, $tkind) = @_;
	return '' if $tkind eq 'plain';
	if ($tkind =~ /^citus/)
	{
		# distributed by the key, ordinary or partitioned
		(my $part = $tkind) =~ s/^citus_?//;
		return ($part ? partitioned_sql($target, $part)
			: "CREATE TABLE $target (k int, a text, b text, c text, __start_at int, __end_at int, "
			  . "__system_start_at int, __system_end_at int, PRIMARY KEY (k, __start_at, __system_start_at));\n")
		  . "SELECT create_distributed_table('$target', 'k');\n";
	}
	my ($by, @parts) =
	    $tkind eq 'hash' ? ('HASH (k)', map { "FOR VALUES WITH (MODULUS 3, REMAINDER $_)" } 0 .. 2)
	  : ("RANGE ($tkind)", 'FOR VALUES FROM (MINVALUE) TO (3)', 'FOR VALUES FROM (3) TO (6)',
		'FOR VALUES FROM (6) TO (MAXVALUE)');
	my $i = 0;
	return "CREATE TABLE $target (k int, a text, b text, c text, __start_at int, __end_at int, "
	  . "__system_start_at int, __system_end_at int, PRIMARY KEY (k, __start_at, __system_start_at)) "
	  . "PARTITION BY $by;\n"
	  . join('', map { "CREATE TABLE ${target}_p" . $i++ . " PARTITION OF $target $_;\n" } @parts)
	  # (a unique index must hold the partitioning columns)
	  . ($tkind eq '__system_start_at' ? ''
		: "CREATE UNIQUE INDEX ON $target (k, __start_at) WHERE __system_end_at IS NULL;\n");
}

sub create_sql
{
	my ($id, $mode, $tracked, $types, $tkind) = @_;
	my ($feed, $target, $flow) = ("feed_$id", "tgt_$id", "f_$id");
	my ($btt, $stt) = @{ $types // [ 'int', 'int' ] };
	my @opts = (
		"sequence_by => 'bt'",
		"stored_as_scd_type => 'bitemporal'",
		"system_sequence_by => 'st'",
		q{apply_as_deletes => $$op = 'D'$$},
		q{apply_as_truncates => $$op = 'T'$$},
		"except_column_list => '{op,bt,st}'",
		"ignore_null_updates => " . ($mode->{ignore} ? 'true' : 'false'),
		"continuous => false",
		"name => '$flow'");
	push @opts, "track_history_column_list => '{" . join(',', @$tracked) . "}'"
	  if $mode->{subset};
	return "CREATE TABLE $feed (k int, a text, b text, c text, op text, bt $btt, st $stt);\n"
	  . partitioned_sql($target, $tkind // 'plain')
	  . "SELECT 'FLOW:' || autocdc.create_flow('$target', '$feed', '{k}',\n    "
	  . join(",\n    ", @opts) . ");\n"
	  # as_of through the index of the periods on the targets create_flow
	  # makes, by the plain query on the partitioned ones
	  . (($tkind // 'plain') eq 'plain' ? "SELECT autocdc.create_as_of_index('$target');\n" : '');
}

sub run_sql
{
	my ($id, $r) = @_;
	my $cols = join(', ',
		'k', (map { "quote_nullable($_)" } @COLS),
		map { "coalesce($_\::text, 'NULL')" }
		  qw(__start_at __end_at __system_start_at __system_end_at));
	return "SELECT 'RUN:' || num_events FROM autocdc.run_flow('f_$id');\n"
	  . "SELECT 'ROW$r:' || concat_ws('|', $cols) FROM tgt_$id;\n"
	  . "SELECT 'ROW$r:';\n";    # so that an empty target still shows the tag
}

# The SQL script of one stream: fresh feed and flow, an empty first run, then
# each run's transactions and a run_flow with the target after it, a second
# run_flow, and the flow's total.
sub stream_sql
{
	my ($id, $mode, $tracked, $events, $plan, $tkind) = @_;
	my $sql = create_sql($id, $mode, $tracked, undef, $tkind) . run_sql($id, 0);
	my $r = 0;
	for my $txns (@$plan)
	{
		for my $stmts (@$txns)
		{
			$sql .= "BEGIN;\n" if @$stmts > 1;
			$sql .= "INSERT INTO feed_$id VALUES "
			  . join(', ', map { sql_row($events->[$_]) } @$_) . ";\n"
			  for @$stmts;
			$sql .= "COMMIT;\n" if @$stmts > 1;
		}
		$sql .= run_sql($id, ++$r);
	}
	$sql .= run_sql($id, ++$r);    # right after the last one: nothing new
	$sql .= "SELECT 'TOTAL:' || num_events FROM autocdc.flows WHERE name = 'f_$id';\n";
	return $sql . asof_sql($id);
}

# autocdc.as_of against its definition written as a plain query, at the
# business times 0, 2, .., 8 (the sequences are 1..8) and at each system time
# where a belief begins, before the first, and for the current belief: the
# number of (valid_at, known_at) pairs checked and of those that differ.
# (Every business time at every system time would triple the test's time.)
sub asof_sql
{
	my ($id) = @_;
	my $t = "tgt_$id";
	my $row = "concat_ws('|', k, a, b, c, __start_at, __end_at, __system_start_at, __system_end_at)";
	# the definition reads a copy of a distributed target on the coordinator
	# (Citus cannot join its rows laterally with an aggregate)
	my ($def, $copy) = ($t, '');
	($def, $copy) = ("copy_$id", "CREATE TEMP TABLE copy_$id AS SELECT * FROM $t;\n") if $citus;
	return $copy . <<"SQL";
WITH ys AS (SELECT __system_start_at AS y FROM $def UNION SELECT min(__system_start_at) - 1 FROM $def
			UNION SELECT NULL::int),
	 pairs AS (SELECT x, y FROM generate_series(0, 9, 2) x, ys),
	 cmp AS (SELECT x, y, g.got, w.want FROM pairs,
				LATERAL (SELECT string_agg($row, ',' ORDER BY k) AS got FROM
					(SELECT * FROM autocdc.as_of(NULL::$t, x, y) WHERE y IS NOT NULL
					 UNION ALL SELECT * FROM autocdc.as_of(NULL::$t, x) WHERE y IS NULL) r) g,
				LATERAL (SELECT string_agg($row, ',' ORDER BY k) AS want FROM $def
				  WHERE __start_at <= x AND (__end_at IS NULL OR x < __end_at)
					AND CASE WHEN y IS NULL THEN __system_end_at IS NULL
							 ELSE __system_start_at <= y AND (__system_end_at IS NULL OR y < __system_end_at) END) w)
SELECT 'ASOF:' || count(*) || ' ' || count(*) FILTER (WHERE got IS DISTINCT FROM want)
	   || coalesce(' first: ' || min(format('x=%s y=%s got=%s want=%s', x, y, got, want))
					  FILTER (WHERE got IS DISTINCT FROM want), '')
  FROM cmp;
SQL
}

sub cleanup_sql
{
	my ($id) = @_;
	return "SELECT autocdc.drop_flow('f_$id', true);\nDROP TABLE feed_$id;\n";
}

# the target after run $r, as rendered lines sorted
sub rows_after
{
	my ($lines, $r) = @_;
	return sort_lines(map { /^ROW$r:(.*)/ ? $1 : () } @$lines);
}

############################################################################
# The cluster.
############################################################################

my $node = property_node('bitemporal_property');

sub run_psql
{
	my ($sql) = @_;
	my ($out, $err, $timed_out) = ('', '', 0);
	$node->psql('postgres', $sql,
		stdout => \$out, stderr => \$err, on_error_stop => 0,
		timeout => do { no warnings 'once'; $PostgreSQL::Test::Utils::timeout_default },
		timed_out => \$timed_out);
	$err .= "\n(psql timed out)" if $timed_out;
	return ([ split /\n/, $out ], $err);
}

my $t0 = time;
my $id = 0;
my $nfail = 0;

############################################################################
# Deterministic engine checks.
############################################################################

# The worked example, one event per run, bt and st of type time.
{
	$id++;
	my $sql = create_sql($id, {}, undef, [ 'time', 'time' ]) . run_sql($id, 0);
	my $r = 0;
	for my $e (@EXAMPLE)
	{
		$sql .= "INSERT INTO feed_$id VALUES " . sql_row($e) . ";\n" . run_sql($id, ++$r);
	}
	my ($lines, $err) = run_psql($sql . cleanup_sql($id));
	my $pass = 1;
	for my $n (1 .. 4)
	{
		next unless defined $EXAMPLE_AFTER[ $n - 1 ];
		$pass &= is(rows_after($lines, $n), $EXAMPLE_AFTER[ $n - 1 ], "engine: worked example after run $n");
	}
	{
		local $CMP = sub { $_[0] cmp $_[1] };
		$pass &= is(rows_after($lines, 3), render(model_bitemporal([ @EXAMPLE[ 0 .. 2 ] ], 0, [@COLS])),
			'engine: worked example after run 3 equals the model');
	}
	$pass &= unlike($err, qr/ERROR|FATAL|PANIC|timed out/, 'engine: worked example without errors');
	diag "worked example: psql stderr:\n$err\nscript:\n$sql" unless $pass;
	$nfail++ unless $pass;
}

# The target's columns and their types: business time has bt's type, system
# time st's.
{
	$id++;
	my $sql = create_sql($id, {}, undef, [ 'int', 'bigint' ])
	  . "SELECT 'COL:' || attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute"
	  . " WHERE attrelid = 'tgt_$id'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;\n";
	my ($lines, $err) = run_psql($sql . cleanup_sql($id));
	is(join(',', map { /^COL:(.*)/ ? $1 : () } @$lines),
		'k integer,a text,b text,c text,__start_at integer,__end_at integer,'
		  . '__system_start_at bigint,__system_end_at bigint',
		'engine: target columns and types')
	  or diag "stderr:\n$err";
}

# A NULL system sequence fails the run; nothing of it is applied.
{
	$id++;
	my $f = "f_$id";
	my $sql = create_sql($id, {}, undef)
	  . "INSERT INTO feed_$id VALUES (1, 'a1', NULL, NULL, 'U', 1, 1);\n"
	  . run_sql($id, 1)
	  . "INSERT INTO feed_$id VALUES (1, 'a2', NULL, NULL, 'U', 2, 2), (2, 'a3', NULL, NULL, 'U', 3, NULL);\n"
	  . run_sql($id, 2)
	  . "SELECT 'STATE:' || state FROM autocdc.flows WHERE name = '$f';\n";
	my ($lines, $err) = run_psql($sql . cleanup_sql($id));
	is(rows_after($lines, 1), "1|'a1'|NULL|NULL|1|NULL|1|NULL", 'engine: NULL system sequence: the first run applies');
	like($err, qr/ERROR/, 'engine: NULL system sequence fails the run');
	is(join(',', map { /^RUN:(.*)/ ? $1 : () } @$lines), '1', 'engine: NULL system sequence: the failing run reports nothing');
	is(rows_after($lines, 2), "1|'a1'|NULL|NULL|1|NULL|1|NULL", 'engine: NULL system sequence: nothing of the failed run is applied');
	is(join(',', map { /^STATE:(.*)/ ? $1 : () } @$lines), 'error', 'engine: NULL system sequence: the flow is in error');
	note "NULL system sequence error: " . join(' / ', grep { /ERROR/ } split /\n/, $err);
}

############################################################################
# Random streams.
############################################################################

my @MODES = (
	{ name => 'bitemporal',                   ignore => 0 },
	{ name => 'bitemporal_ignore_nulls',      ignore => 1 },
	{ name => 'bitemporal_tracked_subset',    ignore => 0, subset => 1 },
	{ name => 'bitemporal_subset_ignore_nulls', ignore => 1, subset => 1 },
);

sub pick_tracked
{
	my ($mode) = @_;
	return [@COLS] unless $mode->{subset};
	return pick([qw(b)], [qw(b)], [qw(a)], [qw(a b)], [qw(b c)]);
}

# What a stream exercises (for the per-mode notes): equal business sequence
# of one key (or a truncate) with different system sequences; equal
# (business, system) sequence; an event earlier in system time than one
# before it; truncates; rows whose belief ended.
sub coverage
{
	my ($events, $cov) = @_;
	my (%bt_st, %pair, $late, $max_st);
	for my $e (@$events)
	{
		my $k = kind_of($e) eq 'T' ? '*' : $e->{k};
		push @{ $bt_st{"$k/$e->{bt}"} }, $e->{st};
		$pair{"$k/$e->{bt}/$e->{st}"}++;
		$late = 1 if defined $max_st && $e->{st} < $max_st;
		$max_st = $e->{st} if !defined $max_st || $e->{st} > $max_st;
	}
	# a truncate ties with every key's event at its bt
	for my $kb (grep { /^\*\// } keys %bt_st)
	{
		my ($bt) = $kb =~ m{/(.*)};
		push @{ $bt_st{$_} }, @{ $bt_st{$kb} } for grep { m{^\d+/\Q$bt\E$} } keys %bt_st;
	}
	for my $p (grep { /^\*\// } keys %pair)
	{
		(my $rest = $p) =~ s{^\*/}{};
		$pair{$_}++ for grep { m{^\d+/\Q$rest\E$} } keys %pair;
	}
	$cov->{bt_tie}++ if grep { my %d = map { $_ => 1 } @$_; keys(%d) > 1 } values %bt_st;
	$cov->{exact_tie}++ if grep { $_ > 1 } values %pair;
	$cov->{late}++ if $late;
	$cov->{truncate}++ if grep { kind_of($_) eq 'T' } @$events;
}

sub coverage_note
{
	my ($cov, $n) = @_;
	return sprintf("of %d streams: %d with equal bt and different st, %d with equal (bt, st), "
		  . "%d late in system time, %d with truncates, %d with a belief that ended",
		$n, map { $cov->{$_} // 0 } qw(bt_tie exact_tie late truncate ended));
}

sub report_failure
{
	my ($what, $mode, $tracked, $events, $plan, $sql, $err, $detail) = @_;
	$nfail++;
	diag "FAILED: seed $seed, $what, mode $mode->{name}"
	  . ($mode->{subset} ? ", tracked {@$tracked}" : '') . "\n"
	  . "events (arrival order):\n" . describe_events($events) . "\n"
	  . "runs (event numbers per run / transaction / statement): " . describe_plan($plan) . "\n"
	  . ($detail // '')
	  . "psql stderr:\n$err\n"
	  . "reproducing script (after CREATE EXTENSION autocdc):\n$sql";
}

# One stream through one flow: compare after every run.  Returns pass.
sub check_stream
{
	my ($name, $mode, $tracked, $events, $plan) = @_;
	$id++;
	# the target: made by create_flow, or partitioned beforehand
	my $tkind = $citus ? pick('citus', 'citus', 'citus_hash', '__start_at')
	  : pick('plain', 'plain', 'hash', '__start_at', '__system_start_at');
	$name .= " ($tkind target)";
	my $sql = stream_sql($id, $mode, $tracked, $events, $plan, $tkind);
	my ($lines, $err) = run_psql($sql . cleanup_sql($id));

	my @counts = plan_counts($plan);
	my $pass = 1;
	my $detail = '';
	my $upto = 0;
	for my $r (0 .. @$plan + 1)
	{
		$upto += $counts[ $r - 1 ] if $r >= 1 && $r <= @$plan;
		my $want = render(model_bitemporal([ @$events[ 0 .. $upto - 1 ] ], $mode->{ignore}, $tracked));
		my $got = rows_after($lines, $r);
		next if $got eq $want;
		$pass = 0;
		$detail .= "after run $r (events #0..#" . ($upto - 1) . "):\nexpected:\n$want\nactual:\n$got\n";
		last;
	}
	ok($pass, "$name (id $id): target equals the model after every run");
	$pass &= is(join(',', map { /^RUN:(.*)/ ? $1 : () } @$lines),
		join(',', 0, @counts, 0), "$name: num_events per run");
	$pass &= is(join(',', map { /^TOTAL:(.*)/ ? $1 : () } @$lines),
		scalar(@$events), "$name: every event applied once");
	my ($asof) = map { /^ASOF:(.*)/ ? $1 : () } @$lines;
	$pass &= like($asof // '', qr/^\d+ 0$/, "$name: as_of equals its definition at every pair of times");
	$pass &= unlike($err, qr/ERROR|FATAL|PANIC|timed out/, "$name: no errors");
	report_failure("$name (id $id)", $mode, $tracked, $events, $plan, $sql, $err, $detail)
	  unless $pass;
	return ($pass, $lines);
}

for my $mode (@MODES)
{
	my $mt0 = time;
	my ($ok, $events_total) = (0, 0);
	my %cov;
	for my $s (1 .. $streams_per_mode)
	{
		my $events = gen_stream(0);
		my $plan = gen_plan(scalar @$events);
		my $tracked = pick_tracked($mode);
		$events_total += @$events;
		coverage($events, \%cov);
		$cov{ended}++
		  if grep { defined $_->[7] } model_bitemporal($events, $mode->{ignore}, $tracked);
		my ($pass) = check_stream(
			"$mode->{name} stream $s (" . scalar(@$events) . " events, " . scalar(@$plan) . " runs)",
			$mode, $tracked, $events, $plan);
		$ok++ if $pass;
	}
	note sprintf("mode %s: %d of %d streams ok, %d events, %.1f s",
		$mode->{name}, $ok, $streams_per_mode, $events_total, time - $mt0);
	note "mode $mode->{name}: " . coverage_note(\%cov, $streams_per_mode);
}

# Arrival order: the same events (no (bt, st) ties) in two arrival orders and
# run splits, into two flows; both equal the model, and so each other.
for my $mode (@MODES)
{
	my $mt0 = time;
	my $ok = 0;
	for my $s (1 .. $shuffle_streams_per_mode)
	{
		my $events = gen_stream(1);
		my $shuffled = [ shuffle @$events ];
		my $tracked = pick_tracked($mode);
		my $name = "shuffled $mode->{name} stream $s (" . scalar(@$events) . " events)";
		my ($p1, $l1) = check_stream("$name, order 1", $mode, $tracked, $events, gen_plan(scalar @$events));
		my ($p2, $l2) = check_stream("$name, order 2", $mode, $tracked, $shuffled, gen_plan(scalar @$events));
		# final targets (the tag of the last run_sql) equal each other
		my ($last1) = grep { /^ROW\d+:/ } reverse @$l1;
		my ($last2) = grep { /^ROW\d+:/ } reverse @$l2;
		my ($r1) = ($last1 // 'ROW0:') =~ /^ROW(\d+):/;
		my ($r2) = ($last2 // 'ROW0:') =~ /^ROW(\d+):/;
		my $same = is(rows_after($l2, $r2), rows_after($l1, $r1), "$name: both arrival orders give the same target");
		$ok++ if $p1 && $p2 && $same;
	}
	note sprintf("shuffled mode %s: %d of %d stream pairs ok, %.1f s",
		$mode->{name}, $ok, $shuffle_streams_per_mode, time - $mt0);
}

note sprintf("%d flows in %.1f s", $id, time - $t0);
diag "seed $seed: $nfail failures" if $nfail;

# Nothing left behind: every stream dropped its flow.
is($node->safe_psql('postgres', 'SELECT count(*) FROM autocdc.flows'),
	'0', 'all flows dropped');

$node->stop;
done_testing();
