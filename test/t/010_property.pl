# 010_property.pl — randomized property test: the autocdc engine against a
# small, independent Perl model of the semantics §4 fold.
#
# Each "stream" is a random list of feed events (a few keys, sequences drawn
# from a small range so that equal sequences collide often, upserts with
# random values including NULLs, deletes, truncates), inserted into a fresh
# feed table in random runs (each run: one or more transactions, each of one
# or more INSERT statements), with autocdc.run_flow() after every run.  After
# the last run the target must equal, row for row, what the model computes
# from the text of docs/semantics.md: ties settled first (last arrival wins, truncates
# included), truncates as per-key deletes at their arrival position, SCD 1
# with and without ignore_null_updates, SCD 2 versions with tracked subsets
# and ignore-null filling from the version open at that point of the walk;
# partial updates through a random column list of ignore_null_updates (only
# the listed columns ignore NULLs) or a random except list (all but the
# listed ones do): an upsert writes what it does not ignore, the others keep
# the value the last upsert that wrote them left (SCD 1) or are filled from
# the version open at that point (SCD 2); and columns_to_update: each upsert
# carries a random list (text[] or name[], maybe empty) of the columns it
# writes, NULL values included.
# Every run_flow must also report num_events = the rows inserted since the
# previous run (so a second run right after the last one reports 0), and
# after every run the target must equal the model of the events inserted so
# far.  Each stream's target is, at random, made by create_flow, or made
# before it as a partitioned table: by hash of the key, by a list of key
# values over three partitions, or (SCD 2) by range of __start_at; the rows
# must be the same.  With AUTOCDC_PROPERTY_CITUS=1 (an installation with
# Citus) the node is the coordinator of a Citus cluster with two workers,
# and the target is, at random, a table Citus distributes by the key
# (ordinary, or partitioned by hash of the key), or a partitioned table on
# the coordinator.
#
# A second phase repeats fewer streams per mode with continuous flows and the
# background worker on: the worker applies the flow whenever it wakes, in
# between and during the run_flow calls, so the split into runs is no longer
# known; the target must still equal the model, and the flow's total
# num_events the number of events (each applied exactly once).
#
# Run just this file (as the postgres OS user, from a copy of the repository,
# extension installed):
#     make installcheck REGRESS= PROVE_TESTS=test/t/010_property.pl
# Run thousands of streams (the count is per mode; there are 12 modes), or
# another seed:
#     AUTOCDC_PROPERTY_STREAMS=2000 AUTOCDC_PROPERTY_SEED=7 \
#         make installcheck REGRESS= PROVE_TESTS=test/t/010_property.pl
# (test/run-tests.sh passes both variables through.)
# On a failure the test prints the seed, the stream's events, the SQL script
# that reproduces it (inserts and run_flow calls, in order), and the expected
# and actual target.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;
use Time::HiRes qw(time);

# empty variables (as test/run-tests.sh passes them when unset) mean "default"
my $seed = length($ENV{AUTOCDC_PROPERTY_SEED} // '') ? $ENV{AUTOCDC_PROPERTY_SEED} : 42;
my $streams_per_mode =
  length($ENV{AUTOCDC_PROPERTY_STREAMS} // '') ? $ENV{AUTOCDC_PROPERTY_STREAMS} : 50;
# streams per mode of the phase with the worker (a fifth of the others)
my $worker_streams_per_mode = int(($streams_per_mode + 4) / 5);
die "AUTOCDC_PROPERTY_STREAMS must be a positive integer"
  unless $streams_per_mode =~ /^\d+$/ && $streams_per_mode > 0;
# AUTOCDC_PROPERTY_CITUS=1: into Citus-distributed targets (property_node)
my $citus = $ENV{AUTOCDC_PROPERTY_CITUS};
srand($seed);
note "seed $seed, $streams_per_mode streams per mode";

# Data columns of the feed (besides k, op, seq, upd: the columns an upsert
# writes under columns_to_update).  Target columns: k, a, b, c (+ __start_at,
# __end_at for SCD 2).
my @COLS = qw(a b c);

############################################################################
# The model (semantics §4).  Events are hashes {k, a, b, c, op, seq} in arrival
# order.  Classification: truncate iff op = 'T', else delete iff op = 'D',
# else upsert (op NULL makes both conditions NULL, i.e. false: an upsert).
############################################################################

sub kind_of
{
	my ($e) = @_;
	return 'T' if defined $e->{op} && $e->{op} eq 'T';
	return 'D' if defined $e->{op} && $e->{op} eq 'D';
	return 'U';
}

# Keys that appear in the stream (a truncate's key is ignored).  Keys seen
# only in truncates have no upsert and so never show in a target.
sub stream_keys
{
	my ($events) = @_;
	my %k;
	$k{ $_->{k} } = 1 for grep { kind_of($_) ne 'T' } @$events;
	return sort { $a <=> $b } keys %k;
}

# The events of one key, truncates expanded into deletes of that key at their
# sequence and arrival position, ties settled (of equal sequences only the
# last-arriving exists), in sequence order.
sub key_events
{
	my ($events, $key) = @_;
	my %at_seq;
	for my $e (@$events)    # arrival order: a later one replaces an earlier
	{
		my $kind = kind_of($e);
		if ($kind eq 'T')
		{
			$at_seq{ $e->{seq} } = { kind => 'D', seq => $e->{seq} };
		}
		elsif ($e->{k} == $key)
		{
			$at_seq{ $e->{seq} } = {
				kind => $kind,
				seq  => $e->{seq},
				upd  => $e->{upd},
				vals => { map { $_ => $e->{$_} } @COLS } };
		}
	}
	return map { $at_seq{$_} } sort { $a <=> $b } keys %at_seq;
}

# Does an upsert write column $c?  $skip: the columns whose NULLs are not
# written (undef or empty: every column is written), or { __ctu => 1 }: the
# columns its list names.
sub writes
{
	my ($skip, $e, $c) = @_;
	return scalar grep { $_ eq $c } @{ $e->{upd} } if $skip && $skip->{__ctu};
	return !($skip && $skip->{$c} && !defined $e->{vals}{$c});
}

# The columns that ignore NULLs in a mode: ignore_null_updates all, a column
# list those listed, an except list those not listed; else none (undef).
sub skip_of
{
	my ($mode, $list) = @_;
	return { map { $_ => 1 } @COLS } if $mode->{ignore};
	return { __ctu => 1 } if ($mode->{partial} // '') eq 'ctu';
	return { map { $_ => 1 } @$list } if ($mode->{partial} // '') eq 'list';
	if (($mode->{partial} // '') eq 'except')
	{
		my %in = map { $_ => 1 } @$list;
		return { map { $_ => 1 } grep { !$in{$_} } @COLS };
	}
	return undef;
}

# SCD 1: a key is present iff its last event is an upsert; its columns are
# that upsert's, or with ignore_null_updates (or its column lists) per column
# the value of the last upsert since the key's last delete/truncate that
# wrote it.
sub model_scd1
{
	my ($events, $ignore_nulls) = @_;    # undef, 0 or the columns skipping NULLs
	my @rows;
	for my $k (stream_keys($events))
	{
		my @ev = key_events($events, $k);
		next unless @ev && $ev[-1]{kind} eq 'U';
		my %row;
		if (!$ignore_nulls)
		{
			%row = %{ $ev[-1]{vals} };
		}
		else
		{
			for my $e (@ev)
			{
				if ($e->{kind} eq 'D') { %row = (); next; }
				for my $c (@COLS)
				{
					$row{$c} = $e->{vals}{$c} if writes($ignore_nulls, $e, $c);
				}
			}
		}
		push @rows, [ $k, map({ $row{$_} } @COLS) ];
	}
	return @rows;
}

sub same_value
{
	my ($x, $y) = @_;    # IS NOT DISTINCT FROM on text
	return !defined $x && !defined $y
	  || defined $x && defined $y && $x eq $y;
}

# SCD 2: walk each key's events with an optional open version (start, values).
sub model_scd2
{
	my ($events, $ignore_nulls, $tracked) = @_;
	my @rows;
	for my $k (stream_keys($events))
	{
		my $open;    # { start => seq, vals => {...} }
		my @versions;
		for my $e (key_events($events, $k))
		{
			if ($e->{kind} eq 'D')
			{
				push @versions, [ $open, $e->{seq} ] if $open;
				undef $open;
				next;
			}
			my %v = %{ $e->{vals} };
			for my $c (@COLS)
			{
				$v{$c} = $open ? $open->{vals}{$c} : undef
				  unless writes($ignore_nulls, $e, $c);
			}
			if (!$open)
			{
				$open = { start => $e->{seq}, vals => \%v };
			}
			elsif (!grep { !same_value($open->{vals}{$_}, $v{$_}) } @$tracked)
			{
				$open->{vals} = \%v;    # keep start, untracked change in place
			}
			else
			{
				push @versions, [ $open, $e->{seq} ];
				$open = { start => $e->{seq}, vals => \%v };
			}
		}
		push @versions, [ $open, undef ] if $open;
		for my $ver (@versions)
		{
			my ($v, $end) = @$ver;
			push @rows, [ $k, map({ $v->{vals}{$_} } @COLS), $v->{start}, $end ];
		}
	}
	return sort { $a->[0] <=> $b->[0] || $a->[4] <=> $b->[4] } @rows;
}

# Canonical text: one line per row, text values quoted, NULL as NULL; the SQL
# side renders the target the same way (quote_nullable / coalesce).
sub render
{
	my ($scd2, @rows) = @_;
	my @lines;
	for my $r (@rows)
	{
		my @f = ($r->[0], map { defined $_ ? "'$_'" : 'NULL' } @$r[ 1 .. 3 ]);
		push @f, map { defined $_ ? $_ : 'NULL' } @$r[ 4 .. 5 ] if $scd2;
		push @lines, join('|', @f);
	}
	return join("\n", @lines);
}

############################################################################
# Model sanity: semantics §8 examples 1-4 (name -> a, city -> b, c unused).
############################################################################
{
	my @ex = map {
		{ k => $_->[0], a => $_->[1], b => $_->[2], c => undef, op => $_->[3], seq => $_->[4] }
	} (
		[ 124, 'Raul',     'Oaxaca',      'I', 1 ],
		[ 123, 'Isabel',   'Monterrey',   'I', 1 ],
		[ 125, 'Mercedes', 'Tijuana',     'I', 2 ],
		[ 126, 'Lily',     'Cancun',      'I', 2 ],
		[ 123, undef,      undef,         'D', 6 ],
		[ 125, 'Mercedes', 'Guadalajara', 'U', 6 ],
		[ 125, 'Mercedes', 'Mexicali',    'U', 5 ],
		[ 123, 'Isabel',   'Chihuahua',   'U', 5 ]);
	is( render(0, model_scd1(\@ex, undef)),
		"124|'Raul'|'Oaxaca'|NULL\n125|'Mercedes'|'Guadalajara'|NULL\n126|'Lily'|'Cancun'|NULL",
		'model: example 1');
	my @ex2 = (@ex,
		{ k => undef, a => undef, b => undef, c => undef, op => 'T', seq => 3 });
	is( render(0, model_scd1(\@ex2, undef)),
		"125|'Mercedes'|'Guadalajara'|NULL",
		'model: example 2');
	is( render(1, model_scd2(\@ex, undef, [qw(a b c)])),
		join("\n",
			"123|'Isabel'|'Monterrey'|NULL|1|5",
			"123|'Isabel'|'Chihuahua'|NULL|5|6",
			"124|'Raul'|'Oaxaca'|NULL|1|NULL",
			"125|'Mercedes'|'Tijuana'|NULL|2|5",
			"125|'Mercedes'|'Mexicali'|NULL|5|6",
			"125|'Mercedes'|'Guadalajara'|NULL|6|NULL",
			"126|'Lily'|'Cancun'|NULL|2|NULL"),
		'model: example 3');
	is( render(1, model_scd2(\@ex, undef, [qw(a c)])),
		join("\n",
			"123|'Isabel'|'Chihuahua'|NULL|1|6",
			"124|'Raul'|'Oaxaca'|NULL|1|NULL",
			"125|'Mercedes'|'Guadalajara'|NULL|2|NULL",
			"126|'Lily'|'Cancun'|NULL|2|NULL"),
		'model: example 4');
}

############################################################################
# Random streams.
############################################################################

sub pick { return $_[ int rand @_ ]; }

sub gen_stream
{
	my $nkeys   = 1 + int rand 4;      # keys 1..nkeys
	my $maxseq  = 2 + int rand 8;      # sequences 1..maxseq
	my $n       = 1 + int rand 24;     # events
	my $p_trunc = rand() < 0.25 ? 0 : rand 0.25;
	my $p_del   = rand 0.4;
	my $p_null  = 0.1 + rand 0.6;
	my $nvals   = 1 + int rand 3;      # few distinct values: tracked columns often equal
	my $val = sub {
		my ($c) = @_;
		return rand() < $p_null ? undef : $c . (1 + int rand $nvals);
	};
	my @events;
	for (1 .. $n)
	{
		my $r = rand;
		my %e = (seq => 1 + int rand $maxseq, map { $_ => $val->($_) } @COLS);
		# the columns an upsert writes (columns_to_update): any subset
		$e{upd} = [ grep { rand() < 0.5 } @COLS ];
		if ($r < $p_trunc)
		{
			# the truncate's key and values are ignored: mostly NULL, sometimes not
			%e = (%e, op => 'T', k => rand() < 0.7 ? undef : 1 + int rand $nkeys);
		}
		elsif ($r < $p_trunc + $p_del)
		{
			%e = (%e, op => 'D', k => 1 + int rand $nkeys);
			delete $e{upd} if rand() < 0.5;    # a delete's list does not matter
		}
		else
		{
			%e = (%e, op => pick('U', 'I', undef), k => 1 + int rand $nkeys);
		}
		push @events, \%e;
	}
	return \@events;
}

# Split event indexes 0..n-1 into runs -> transactions -> statements.
sub gen_plan
{
	my ($n) = @_;
	my $nruns = 1 + int rand(rand() < 0.3 ? 1 : 6);
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
		sql_lit($e->{op}), $e->{seq},
		defined $e->{upd} ? "'{" . join(',', @{ $e->{upd} }) . "}'" : 'NULL')
	  . ')';
}

my @MODES = (
	{ name => 'scd1',                 scd => 1, ignore => 0 },
	{ name => 'scd1_ignore_nulls',    scd => 1, ignore => 1 },
	{ name => 'scd2',                 scd => 2, ignore => 0 },
	{ name => 'scd2_tracked_subset',  scd => 2, ignore => 0, subset => 1 },
	{ name => 'scd2_ignore_nulls',    scd => 2, ignore => 1 },
	{ name => 'scd2_subset_ignore_nulls', scd => 2, ignore => 1, subset => 1 },
	{ name => 'scd1_ignore_nulls_on',        scd => 1, ignore => 0, partial => 'list' },
	{ name => 'scd1_ignore_nulls_except',    scd => 1, ignore => 0, partial => 'except' },
	{ name => 'scd2_ignore_nulls_on',        scd => 2, ignore => 0, partial => 'list' },
	{ name => 'scd2_subset_ignore_nulls_except', scd => 2, ignore => 0, partial => 'except',
	  subset => 1 },
	{ name => 'scd1_columns_to_update',       scd => 1, ignore => 0, partial => 'ctu' },
	{ name => 'scd2_subset_columns_to_update', scd => 2, ignore => 0, partial => 'ctu', subset => 1 },
);

# The SQL script of one stream: fresh feed and flow, an empty first run, then
# each run's transactions and a run_flow, a second run_flow, the target, and
# clean-up.  Plain autocommit statements: every run_flow is its own
# transaction.  Output lines are tagged so that NOTICEs and the like do not
# matter.
# The target made before the flow, as a partitioned table of kind $tkind
# (plain: none, create_flow makes an ordinary one).
sub target_sql
{
	my ($target, $mode, $tkind) = @_;
	return '' if $tkind eq 'plain';
	if ($tkind =~ /^citus/)
	{
		# distributed by the key, ordinary or partitioned
		(my $part = $tkind) =~ s/^citus_?//;
		return ($part ? target_sql($target, $mode, $part)
			: "CREATE TABLE $target (k int, a text, b text, c text"
			  . ($mode->{scd} == 2 ? ', __start_at int, __end_at int, PRIMARY KEY (k, __start_at));
' : ', PRIMARY KEY (k));
'))
		  . "SELECT create_distributed_table('$target', 'k');
";
	}
	my $scd2 = $mode->{scd} == 2;
	my $cols = 'k int, a text, b text, c text'
	  . ($scd2 ? ', __start_at int, __end_at int, PRIMARY KEY (k, __start_at)' : ', PRIMARY KEY (k)');
	my ($by, @parts) =
	    $tkind eq 'hash' ? ('HASH (k)', map { "FOR VALUES WITH (MODULUS 3, REMAINDER $_)" } 0 .. 2)
	  : $tkind eq 'list' ? ('LIST (k)', 'FOR VALUES IN (1, 4)', 'FOR VALUES IN (2)', 'DEFAULT')
	  : ('RANGE (__start_at)', 'FOR VALUES FROM (MINVALUE) TO (3)', 'FOR VALUES FROM (3) TO (6)',
		'FOR VALUES FROM (6) TO (MAXVALUE)');
	my $i = 0;
	return "CREATE TABLE $target ($cols) PARTITION BY $by;
"
	  . join('', map { "CREATE TABLE ${target}_p" . $i++ . " PARTITION OF $target $_;
" } @parts)
	  . ($scd2 && $tkind ne 'range'
		? "CREATE UNIQUE INDEX ON $target (k) WHERE __end_at IS NULL;
" : '');
}

sub stream_sql
{
	my ($id, $mode, $tracked, $events, $plan, $worker, $list, $tkind) = @_;
	my ($feed, $target, $flow) = ("feed_$id", "tgt_$id", "f_$id");
	my @opts = (
		"sequence_by => 'seq'",
		"ignore_null_updates => " . ($mode->{ignore} ? 'true' : 'false'),
		q{apply_as_deletes => $$op = 'D'$$},
		q{apply_as_truncates => $$op = 'T'$$},
		"except_column_list => '{op,seq,upd}'",
		"stored_as_scd_type => '$mode->{scd}'",
		"name => '$flow'",
		"continuous => " . ($worker ? 'true' : 'false'));
	push @opts, "track_history_column_list => '{" . join(',', @$tracked) . "}'"
	  if $mode->{subset};
	push @opts, "ignore_null_updates_column_list => '{" . join(',', @$list) . "}'"
	  if ($mode->{partial} // '') eq 'list';
	push @opts, "ignore_null_updates_except_column_list => '{" . join(',', @$list) . "}'"
	  if ($mode->{partial} // '') eq 'except';
	push @opts, "columns_to_update => 'upd'" if ($mode->{partial} // '') eq 'ctu';
	# the list's type: text[] or name[]
	my $updtype = rand() < 0.5 ? 'text[]' : 'name[]';
	my $run = "SELECT 'RUN:' || num_events FROM autocdc.run_flow('$flow');\n";
	my $cols = "k, quote_nullable(a), quote_nullable(b), quote_nullable(c)";
	$cols .= ", coalesce(__start_at::text, 'NULL'), coalesce(__end_at::text, 'NULL')"
	  if $mode->{scd} == 2;
	my $order = $mode->{scd} == 2 ? 'k, __start_at' : 'k';
	my $rows = sub {
		my ($tag) = @_;
		return "SELECT '$tag:' || concat_ws('|', $cols) FROM $target ORDER BY $order;\n";
	};
	my $sql =
	    "CREATE TABLE $feed (k int, a text, b text, c text, op text, seq int, upd $updtype);\n"
	  . target_sql($target, $mode, $tkind)
	  . "SELECT 'FLOW:' || autocdc.create_flow('$target', '$feed', '{k}',\n    "
	  . join(",\n    ", @opts) . ");\n"
	  . $run;
	my $r = 0;
	for my $txns (@$plan)
	{
		for my $stmts (@$txns)
		{
			$sql .= "BEGIN;\n" if @$stmts > 1;
			$sql .= "INSERT INTO $feed VALUES "
			  . join(', ', map { sql_row($events->[$_]) } @$_) . ";\n"
			  for @$stmts;
			$sql .= "COMMIT;\n" if @$stmts > 1;
		}
		$sql .= $run;
		$r++;
		# the target after each run (the worker's runs are not known)
		$sql .= "SELECT 'RUN$r';\n" . $rows->("AFTER$r") unless $worker;
	}
	$sql .= $run;    # right after the last one: nothing new
	$sql .= $rows->('ROW');
	$sql .= "SELECT 'TOTAL:' || num_events FROM autocdc.flows WHERE name = '$flow';\n";
	return $sql;
}

sub cleanup_sql
{
	my ($id) = @_;
	return "SELECT autocdc.drop_flow('f_$id', true);\nDROP TABLE feed_$id;\n";
}

sub describe_events
{
	my ($events) = @_;
	my $i = 0;
	return join("\n",
		map {
			sprintf("  #%-2d k=%-4s a=%-4s b=%-4s c=%-4s op=%-4s seq=%d upd=%s",
				$i++, map({ $_ // 'NULL' } @$_{qw(k a b c op)}), $_->{seq},
				defined $_->{upd} ? '{' . join(',', @{ $_->{upd} }) . '}' : 'NULL')
		} @$events);
}

############################################################################
# The cluster.
############################################################################

my $node = property_node('property');

my $t0 = time;
my $id = 0;
my $nfail = 0;
my $by_worker = 0;    # events of the worker phase that no run_flow applied
for my $worker (0, 1)
{
	if ($worker)
	{
		$node->safe_psql('postgres',
			"ALTER SYSTEM SET autocdc.enabled = on; SELECT pg_reload_conf();");
		$node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc worker'")
		  or die "the worker did not start";
	}
for my $mode (@MODES)
{
	my $mt0 = time;
	my ($ok, $events_total) = (0, 0);
	for my $s (1 .. ($worker ? $worker_streams_per_mode : $streams_per_mode))
	{
		$id++;
		my $events = gen_stream();
		my $plan = gen_plan(scalar @$events);
		my $tracked = [@COLS];
		$tracked = pick([qw(a)], [qw(b)], [qw(a b)], [qw(b c)], [qw(a c)])
		  if $mode->{subset};
		# the column list of a partial mode: any subset, empty included
		my $list = [ grep { rand() < 0.5 } @COLS ];
		my $skip = skip_of($mode, $list);
		# the target: made by create_flow, or partitioned beforehand
		my $tkind = $citus ? pick('citus', 'citus', 'citus_hash', 'hash')
		  : pick('plain', 'plain', 'hash', 'list', $mode->{scd} == 2 ? 'range' : 'hash');
		$events_total += @$events;

		my @model =
		  $mode->{scd} == 1
		  ? model_scd1($events, $skip)
		  : model_scd2($events, $skip, $tracked);
		my $want_rows = render($mode->{scd} == 2, @model);
		my $want_runs = join(',',
			0, (map { my $n = 0; $n += @$_ for map { @$_ } @$_; $n } @$plan), 0);
		# the model of the events inserted by the end of each run
		my ($done, @want_after) = (0);
		for my $run (@$plan)
		{
			$done += @$_ for map { @$_ } @$run;
			my @prefix = @$events[ 0 .. $done - 1 ];
			push @want_after, render($mode->{scd} == 2,
				$mode->{scd} == 1
				? model_scd1(\@prefix, $skip)
				: model_scd2(\@prefix, $skip, $tracked));
		}

		my $sql = stream_sql($id, $mode, $tracked, $events, $plan, $worker, $list, $tkind);
		my ($out, $err, $timed_out) = ('', '', 0);
		$node->psql('postgres', $sql . cleanup_sql($id),
			stdout => \$out, stderr => \$err, on_error_stop => 0,
			timeout => $PostgreSQL::Test::Utils::timeout_default,
			timed_out => \$timed_out);
		$err .= "\n(psql timed out)" if $timed_out;
		my @lines = split /\n/, $out;
		my $got_rows = join("\n", map { /^ROW:(.*)/ ? $1 : () } @lines);
		my $got_runs = join(',', map { /^RUN:(.*)/ ? $1 : () } @lines);
		my $got_total = join(',', map { /^TOTAL:(.*)/ ? $1 : () } @lines);
		my @got_after;
		for (@lines)
		{
			push @got_after, [] if /^RUN\d+$/;
			push @{ $got_after[-1] }, $1 if /^AFTER\d+:(.*)/;
		}

		my $name = ($worker ? 'worker: ' : '') . "$mode->{name} stream $s (id $id, $tkind target, "
		  . scalar(@$events) . " events, " . scalar(@$plan) . " runs)";
		my $pass = is($got_rows, $want_rows, "$name: target equals the model");
		$pass &= is($got_total, scalar(@$events), "$name: every event applied once");
		$pass &= is($got_runs, $want_runs, "$name: num_events per run") unless $worker;
		$pass &= is(join("\n--\n", map { join("\n", @$_) } @got_after),
			join("\n--\n", @want_after), "$name: the target equals the model after every run")
		  unless $worker;
		if ($worker)
		{
			my $by_runs = 0;
			$by_runs += $_ for split /,/, $got_runs;
			$by_worker += @$events - $by_runs;
		}
		$pass &= unlike($err, qr/ERROR|FATAL|PANIC|timed out/, "$name: no errors");
		if ($pass)
		{
			$ok++;
			next;
		}
		$nfail++;
		diag "FAILED: seed $seed, mode $mode->{name}, stream $s (id $id)"
		  . ($mode->{subset} ? ", tracked {@$tracked}" : '')
		  . ($mode->{partial} ? ", $mode->{partial} list {@$list}" : '') . "\n"
		  . "events (arrival order):\n" . describe_events($events) . "\n"
		  . "runs (event numbers per run / transaction / statement): "
		  . join(' ; ',
			map { '[' . join(' ', map { '{' . join(' ', map { '(' . join(',', @$_) . ')' } @$_) . '}' } @$_) . ']' } @$plan)
		  . "\npsql stderr:\n$err"
		  . "\nreproducing script (after CREATE EXTENSION autocdc):\n$sql";
	}
	note sprintf("%smode %s: %d streams ok, %d events, %.1f s",
		$worker ? 'worker: ' : '', $mode->{name}, $ok, $events_total, time - $mt0);
	# run_flow decodes from the slot's restart_lsn: how far back that is
	# explains most of the time per stream
	note "WAL bytes behind the slot's restart_lsn: "
	  . $node->safe_psql('postgres',
		"SELECT string_agg((pg_current_wal_lsn() - restart_lsn)::text, ',') "
		  . "FROM pg_replication_slots");
}
}
note sprintf("%d streams in %.1f s", $id, time - $t0);
ok($by_worker > 0, "the worker applied events itself in the worker phase ($by_worker)");
diag "seed $seed: $nfail of $id streams failed" if $nfail;

# Nothing left behind: every stream dropped its flow.
is($node->safe_psql('postgres', 'SELECT count(*) FROM autocdc.flows'),
	'0', 'all flows dropped');

$node->stop;
done_testing();
