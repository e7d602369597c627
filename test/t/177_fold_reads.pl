
# How the fold reaches the rows of the keys a run touches (docs/internals.md,
# "The engine"): a target and hidden state that hold under a page per 20
# touched keys are read whole, the fold passing over the keys the batch does
# not touch; larger ones are joined to the keys, by index probes.  A
# partitioned target's pages are its partitions' (the partitioned table
# itself has none): a small batch into a large partitioned target must not
# read it whole.  Each run's choice is read off its DEBUG1 line; the results
# are checked either way.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('foldreads', conf => ['autocdc.enabled = off']);
my $db = 'postgres';

$node->safe_psql($db, q{
	CREATE EXTENSION autocdc;
	CREATE TABLE small_feed (id int, v text, seq int);
	SELECT autocdc.create_flow('small', 'small_feed', '{id}', 'seq', continuous => false);
	CREATE TABLE part (id int PRIMARY KEY, v text, seq int) PARTITION BY HASH (id);
	CREATE TABLE part_0 PARTITION OF part FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE part_1 PARTITION OF part FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	-- 20,000 rows a user wrote: about a hundred pages, the hidden state empty
	INSERT INTO part SELECT g, 'user', 0 FROM generate_series(1, 20000) g;
	CREATE TABLE part_feed (id int, v text, seq int);
	SELECT autocdc.create_flow('part', 'part_feed', '{id}', 'seq', continuous => false);
	SELECT autocdc.run_flow('small');
	SELECT autocdc.run_flow('part');
});

# run a flow with its DEBUG1 lines logged; whether it read target and state whole
sub read_whole
{
	my ($flow) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql($db, qq{
		SET log_min_messages = debug1;
		SELECT autocdc.run_flow('$flow');
	});
	my $log = slurp_file($node->logfile, $offset);
	return $log =~ /flow "$flow": the fold reads target and hidden state whole/ ? 1 : 0;
}

# 1,000 new keys into an empty target: read whole
$node->safe_psql($db, q{INSERT INTO small_feed SELECT g, 'a', 1 FROM generate_series(1, 1000) g});
is(read_whole('small'), 1, 'a batch of 1,000 keys into an empty target reads it whole');
# 2,000 more keys beside a 1,000-row target of a few pages: whole again
$node->safe_psql($db, q{
	UPDATE small SET v = 'user' WHERE id = 1;
	INSERT INTO small_feed SELECT g, 'b', 2 FROM generate_series(2, 2001) g;
});
is(read_whole('small'), 1, 'a batch of 2,000 keys beside a small target reads it whole');
is($node->safe_psql($db, q{SELECT v, count(*) FROM small GROUP BY v ORDER BY v}),
	"b|2000\nuser|1", 'keys the batch does not touch keep their rows (and a user edit)');

# 50 keys of a partitioned target of 20,000 rows: joined, not read whole
$node->safe_psql($db, q{INSERT INTO part_feed SELECT g * 7, 'flow', 1 FROM generate_series(1, 50) g});
is(read_whole('part'), 0, 'a small batch into a large partitioned target is joined to its keys');
is($node->safe_psql($db, q{SELECT v, count(*) FROM part GROUP BY v ORDER BY v}),
	"flow|50\nuser|19950", 'the partitioned target has the batch\'s rows and keeps the others');

done_testing();
