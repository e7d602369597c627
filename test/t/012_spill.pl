
# The fold holds a batch's touched keys and their events in memory while
# they fit in 5/8 of autocdc.work_mem, and otherwise gives them up: the
# events go to a tuplestore, SQL finds their keys and sorts them in with the
# target's and the hidden state's rows.  Both ways must give the same
# target: three flows of each kind read one feed into three targets, with
# the default work_mem, with 640 kB (SCD 1 keeps only each key's last event:
# 400 keys fit, the 3,000 events the other kinds keep do not) and with the
# minimum (64 kB), over rounds of 3,000 events (out-of-order and late
# sequences, deletes, NULLs).  The DEBUG1 line of each run shows which way it
# went.  The property test checks the in-memory way against the model; this
# one checks the spilled way against it.  640 kB is about midway: SCD 1's
# last events fit from 384 kB, the 3,000 events need 1,024 kB on PostgreSQL
# 18 and 1,200 kB on 15 (16 shrank the allocator's chunk headers).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('spill');

# name => create_flow options; all but plain SCD 1 keep every event
my %flows = (
	s1n => q{stored_as_scd_type => '1', ignore_null_updates => true},
	s2 => q{stored_as_scd_type => '2'},
	s2tn => q{stored_as_scd_type => '2', track_history_column_list => '{v}',
			  ignore_null_updates => true},
	s1 => q{stored_as_scd_type => '1'},);

$node->safe_psql('postgres', q{
	CREATE EXTENSION autocdc;
	CREATE TABLE feed (k int, v text, w int, op text, seq int);
});
for my $f (sort keys %flows)
{
	for my $m ('mem', 'mid', 'spill')
	{
		$node->safe_psql('postgres', qq{
			SELECT autocdc.create_flow('${f}_$m', 'feed', '{k}', sequence_by => 'seq',
				apply_as_deletes => \$\$op = 'D'\$\$, except_column_list => '{op,seq}',
				name => '${f}_$m', $flows{$f})});
	}
}

for my $round (1 .. 3)
{
	# keys 0..399; each round's sequences above the last round's, but one
	# event in 17 is late: older than everything of the previous round
	$node->safe_psql('postgres', qq{
		INSERT INTO feed
		SELECT (g * 37 + $round * 11) % 400,
			   CASE WHEN g % 7 <> 0 THEN md5((g + $round)::text) END,
			   CASE WHEN g % 11 <> 0 THEN g % 5 END,
			   CASE WHEN g % 13 = 0 THEN 'D' ELSE 'U' END,
			   $round * 10000 + (g * 7919) % 3001 - CASE WHEN g % 17 = 0 THEN 15000 ELSE 0 END
		  FROM generate_series(1, 3000) g});
	for my $f (sort keys %flows)
	{
		my $offset = -s $node->logfile;

		$node->safe_psql('postgres', qq{
			SET log_min_messages = debug1;
			SELECT num_events FROM autocdc.run_flow('${f}_mem');
			SET autocdc.work_mem = '640kB';
			SELECT num_events FROM autocdc.run_flow('${f}_mid');
			SET work_mem = 64;
			SET autocdc.work_mem = 64;
			SELECT num_events FROM autocdc.run_flow('${f}_spill');
		});
		my $log = slurp_file($node->logfile, $offset);
		like($log, qr/flow "${f}_mem": 3000 events folded from memory/,
			"round $round, $f: the default work_mem holds the events");
		if ($f eq 's1')
		{
			like($log, qr/flow "${f}_mid": 3000 events folded from memory/,
				"round $round, $f: SCD 1 keeps only each key's last event in memory");
		}
		else
		{
			like($log, qr/flow "${f}_mid": 3000 events folded through SQL: they outgrew work_mem/,
				"round $round, $f: 640 kB does not hold every event");
		}
		like($log, qr/flow "${f}_spill": 3000 events folded through SQL: they outgrew work_mem/,
			"round $round, $f: 64 kB spills them");
		for my $m ('mid', 'spill')
		{
			is( $node->safe_psql('postgres', qq{
					SELECT (SELECT count(*) FROM ${f}_mem) > 100,
						   (SELECT count(*) FROM (TABLE ${f}_mem EXCEPT ALL TABLE ${f}_$m) d)
						   + (SELECT count(*) FROM (TABLE ${f}_$m EXCEPT ALL TABLE ${f}_mem) d)}),
				't|0', "round $round, $f: the $m target is the default's");
		}
	}
}

$node->stop;
done_testing();
