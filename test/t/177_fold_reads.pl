
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

# run a flow with its DEBUG1 lines logged, returning them
sub run_logged
{
	my ($flow) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql($db, qq{
		SET log_min_messages = debug1;
		SELECT autocdc.run_flow('$flow');
	});
	return slurp_file($node->logfile, $offset);
}

# run a flow; whether it read target and state whole
sub read_whole
{
	my ($flow) = @_;
	return run_logged($flow) =~ /flow "$flow": the fold reads target and hidden state whole/ ? 1 : 0;
}

# run a flow; "n of m" touched keys that lay beyond the greatest key of its
# target and hidden state (not probed for), '' when it did not look
sub beyond
{
	my ($flow) = @_;
	return run_logged($flow) =~ /flow "$flow": (\d+ of \d+) touched keys lie beyond/ ? $1 : '';
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

# 1,400 keys, 200 of them beyond the target's greatest key: only the 1,200
# others are probed for, and every key gets its row
$node->safe_psql($db, q{
	INSERT INTO part_feed SELECT g, 'flow2', 2 FROM generate_series(18801, 20000) g;
	INSERT INTO part_feed SELECT g, 'flow2', 2 FROM generate_series(30001, 30200) g;
});
is(beyond('part'), '200 of 1400', 'keys beyond the greatest key of a partitioned target are not probed for');
is($node->safe_psql($db, q{SELECT v, count(*), min(id), max(id) FROM part GROUP BY v ORDER BY v}),
	"flow|50|7|350\nflow2|1400|18801|30200\nuser|18750|1|18800",
	'keys probed for and keys beyond both get their rows');
# fewer than 1,000 keys: no lookup of the greatest key
$node->safe_psql($db, q{INSERT INTO part_feed VALUES (30500, 'flow3', 3)});
is(beyond('part'), '', 'a batch of a few keys does not look up the greatest key');
is($node->safe_psql($db, q{SELECT v FROM part WHERE id = 30500}), 'flow3', 'and its key gets its row');

# an integer key, negative below the new ones: the bound is read as the
# value, not as its bits
$node->safe_psql($db, q{
	CREATE TABLE neg_feed (id int, v text, seq int);
	SELECT autocdc.create_flow('neg', 'neg_feed', '{id}', 'seq', continuous => false);
	INSERT INTO neg_feed SELECT -g, 'a', 1 FROM generate_series(1, 20000) g;
	SELECT autocdc.run_flow('neg');
	INSERT INTO neg_feed SELECT -g, 'b', 2 FROM generate_series(1, 1000) g;
	INSERT INTO neg_feed SELECT g, 'b', 2 FROM generate_series(1, 300) g;
});
is(beyond('neg'), '300 of 1300', 'keys above a negative greatest key are the ones not probed for');
is($node->safe_psql($db, q{SELECT v, count(*), min(id), max(id) FROM neg GROUP BY v ORDER BY v}),
	"a|19000|-20000|-1001\nb|1300|-1000|300", 'every negative and new key gets its row');

# a text key has no such bound: every touched key is probed for
$node->safe_psql($db, q{
	CREATE TABLE txt_feed (id text, v text, seq int);
	SELECT autocdc.create_flow('txt', 'txt_feed', '{id}', 'seq', continuous => false);
	INSERT INTO txt_feed SELECT lpad(g::text, 6, '0'), 'a', 1 FROM generate_series(1, 20000) g;
	SELECT autocdc.run_flow('txt');
	INSERT INTO txt_feed SELECT lpad(g::text, 6, '0'), 'b', 2 FROM generate_series(19001, 21000) g;
});
my $log = run_logged('txt');
unlike($log, qr/touched keys lie beyond/, 'a text key is probed for whatever its value');
unlike($log, qr/flow "txt": the fold reads target and hidden state whole/,
	'the text-keyed run was joined to its keys');
is($node->safe_psql($db, q{SELECT v, count(*) FROM txt GROUP BY v ORDER BY v}), "a|19000\nb|2000",
	'the text-keyed target has every row');

done_testing();
