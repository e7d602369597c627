
# How a run's rows reach its target (docs/internals.md, "The engine"): an
# ordinary table on which an INSERT would only store them and their index
# entries takes them directly, a page per WAL record; a target with
# anything more (a trigger, a rule, row security, a check constraint, a
# deferrable or exclusion constraint, a column the flow does not write, a
# null bound for a NOT NULL column, partitions) gets an INSERT, which does
# it.  Rules add queries that read the rows too (which failed the run
# before they were given copies), the last of them not always an INSERT.
# Each run's path is read off its DEBUG1 line, and what the INSERT would
# have done is checked either way: the rows, the indexes (unique,
# expression, partial) finding them, a duplicate refused with nothing
# applied, a flow reading the target's changes seeing every row.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('directins', conf => ['autocdc.enabled = off']);
my $db = 'postgres';

$node->safe_psql($db, q{CREATE EXTENSION autocdc});

# a target made before its flow (with $ddl after CREATE TABLE), fed by <name>_feed
sub flow_into
{
	my ($name, $ddl, %opt) = @_;
	my $scd = $opt{scd} // 1;
	$node->safe_psql($db, qq{
		CREATE TABLE ${name}_feed (id int, v text, seq int);
		$ddl;
		SELECT autocdc.create_flow('$name', '${name}_feed', '{id}', 'seq', except_column_list => '{seq}',
			stored_as_scd_type => '$scd', continuous => false);
		SELECT autocdc.run_flow('$name');
	});
}

# load the feed with $sql, run the flow with its DEBUG1 lines logged:
# (1 if its rows went in directly, the run's error or '')
sub run
{
	my ($flow, $sql) = @_;
	$node->safe_psql($db, $sql) if $sql;
	my $offset = -s $node->logfile;
	my ($ret, $out, $err) = $node->psql($db, qq{
		SET log_min_messages = debug1;
		SELECT autocdc.run_flow('$flow');
	});
	my $log = slurp_file($node->logfile, $offset);
	my $direct = $log =~ /flow "$flow": \d+ rows go into the target directly/ ? 1 : 0;
	$err =~ s/^psql:<stdin>:\d+: //;
	$err =~ s/\n.*//s;
	return ($direct, $ret == 0 ? '' : $err);
}

my ($direct, $err);

# an ordinary target: a primary key, an expression index, a partial index
flow_into('plain', q{
	CREATE TABLE plain (id int PRIMARY KEY, v text);
	CREATE INDEX plain_lower ON plain (lower(v));
	CREATE INDEX plain_x ON plain (id) WHERE v = 'X';
});
# a flow reading the target's changes, made before any row is written
$node->safe_psql($db, q{
	SELECT autocdc.create_flow(target => 'down', source => 'changes(plain)', keys => '{id}',
							   continuous => false);
	SELECT autocdc.run_flow('down');
});
($direct, $err) = run('plain', q{
	INSERT INTO plain_feed SELECT g, CASE WHEN g % 10 = 0 THEN 'X' ELSE 'v' || g END, 1
	  FROM generate_series(1, 3000) g;
	INSERT INTO plain_feed SELECT g, 'w' || g, 2 FROM generate_series(1, 3000, 3) g;
});
is("$direct|$err", '1|', 'an ordinary target takes the rows directly');
is($node->safe_psql($db, q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT (SELECT count(*) FROM plain),
		   (SELECT count(*) FROM plain WHERE id > 0),
		   (SELECT count(*) FROM plain WHERE lower(v) = 'w1'),
		   (SELECT count(*) FROM plain WHERE v = 'X' AND id > 0),
		   (SELECT count(*) FROM plain WHERE v LIKE 'w%')
}), '3000|3000|1|200|1000', 'every index finds the rows (primary key, expression, partial)');

# a second run replaces rows of keys it touches: still direct, and the
# primary key holds one row per key
($direct, $err) = run('plain', q{INSERT INTO plain_feed SELECT g, 'y', 3 FROM generate_series(1, 100) g});
is("$direct|$err", '1|', 'a run over existing keys takes the rows directly');
is($node->safe_psql($db, q{SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE v = 'y') FROM plain}),
	'3000|3000|100', 'rows replaced, one per key');

# a unique index the batch violates: refused as an INSERT would, nothing applied
$node->safe_psql($db, q{CREATE UNIQUE INDEX plain_v ON plain (v) WHERE v LIKE 'u%'});
($direct, $err) = run('plain', q{INSERT INTO plain_feed VALUES (5001, 'u1', 4), (5002, 'u1', 4), (1, 'z', 4)});
like($err, qr/duplicate key value violates unique constraint "plain_v"/,
	'a duplicate is refused on the direct path');
is($node->safe_psql($db, q{SELECT count(*), count(*) FILTER (WHERE v = 'z') FROM plain}), '3000|0',
	'the failing run applied nothing');
$node->safe_psql($db, q{DROP INDEX plain_v});
($direct, $err) = run('plain');
is("$direct|$err", '1|', 'the same events apply once the index is gone');

# the flow reading the target's changes sees every row written directly
$node->safe_psql($db, q{SELECT autocdc.run_flow('down')});
is($node->safe_psql($db, q{
	SELECT count(*), count(*) FILTER (WHERE p.v IS DISTINCT FROM d.v)
	  FROM plain p FULL JOIN down d USING (id)
}), '3002|0', 'a flow reading the target\'s changes copies it');

# SCD 2: the periods are written by the flow too
flow_into('hist', q{CREATE TABLE hist (id int, v text, __start_at int, __end_at int)}, scd => 2);
($direct, $err) = run('hist', q{
	INSERT INTO hist_feed SELECT g, 'a', 1 FROM generate_series(1, 50) g;
	INSERT INTO hist_feed SELECT g, 'b', 2 FROM generate_series(1, 10) g;
});
is("$direct|$err", '1|', 'an SCD 2 target takes the rows directly');
is($node->safe_psql($db, q{SELECT count(*), count(*) FILTER (WHERE __end_at IS NULL) FROM hist}), '60|50',
	'SCD 2 versions written');

# targets an INSERT must serve
my @insert = (
	['trig', q{
		CREATE TABLE trig (id int PRIMARY KEY, v text);
		CREATE TABLE trig_seen (id int);
		CREATE FUNCTION trig_f() RETURNS trigger LANGUAGE plpgsql AS
		  $$BEGIN INSERT INTO public.trig_seen VALUES (NEW.id); RETURN NEW; END$$;
		CREATE TRIGGER trig_t AFTER INSERT ON trig FOR EACH ROW EXECUTE FUNCTION trig_f();
	}, 'a trigger', q{SELECT count(*) FROM trig_seen}, '20'],
	['rul', q{
		CREATE TABLE rul (id int PRIMARY KEY, v text);
		CREATE TABLE rul_seen (id int);
		CREATE RULE rul_r AS ON INSERT TO rul DO ALSO INSERT INTO rul_seen VALUES (NEW.id);
		CREATE RULE rul_n AS ON INSERT TO rul DO ALSO NOTIFY rul_chan;
	}, 'rules', q{SELECT (SELECT count(*) FROM rul_seen) + (SELECT count(*) FROM rul)}, '40'],
	['chk', q{CREATE TABLE chk (id int PRIMARY KEY, v text CHECK (v <> 'bad'))},
		'a check constraint', q{SELECT count(*) FROM chk}, '20'],
	['dflt', q{
		CREATE TABLE dflt (id int PRIMARY KEY, v text);
		SELECT 1;
	}, 'a column the flow does not write', q{SELECT count(*) FILTER (WHERE extra = 42) FROM dflt}, '20'],
	['defer', q{CREATE TABLE defer (id int, v text, UNIQUE (id) DEFERRABLE)},
		'a deferrable unique constraint', q{SELECT count(*) FROM defer}, '20'],
	['excl', q{CREATE TABLE excl (id int, v text, EXCLUDE USING btree (id WITH =))},
		'an exclusion constraint', q{SELECT count(*) FROM excl}, '20'],
	['rls', q{
		CREATE TABLE rls (id int PRIMARY KEY, v text);
		ALTER TABLE rls ENABLE ROW LEVEL SECURITY;
	}, 'row security', q{SELECT count(*) FROM rls}, '20'],
	['part', q{
		CREATE TABLE part (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
		CREATE TABLE part_0 PARTITION OF part FOR VALUES WITH (MODULUS 2, REMAINDER 0);
		CREATE TABLE part_1 PARTITION OF part FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	}, 'a partitioned table', q{SELECT count(*) FROM part}, '20'],
);
for my $t (@insert)
{
	my ($name, $ddl, $what, $check, $want) = @$t;
	flow_into($name, $ddl);
	# a column added after the flow was made, with a default: the flow does not write it
	$node->safe_psql($db, q{ALTER TABLE dflt ADD COLUMN extra int DEFAULT 42}) if $name eq 'dflt';
	($direct, $err) = run($name, qq{INSERT INTO ${name}_feed SELECT g, 'v', 1 FROM generate_series(1, 20) g});
	is("$direct|$err", '0|', "a target with $what gets an INSERT");
	is($node->safe_psql($db, $check), $want, "the INSERT did its work ($what)");
}

# the check constraint still refuses a row
($direct, $err) = run('chk', q{INSERT INTO chk_feed VALUES (1, 'bad', 2)});
like($err, qr/violates check constraint/, 'a check constraint refuses a bad row');

# a null bound for a NOT NULL column: the INSERT reports it as PostgreSQL does
flow_into('nn', q{CREATE TABLE nn (id int PRIMARY KEY, v text NOT NULL)});
($direct, $err) = run('nn', q{INSERT INTO nn_feed SELECT g, 'v', 1 FROM generate_series(1, 20) g});
is("$direct|$err", '1|', 'a NOT NULL column given values: direct');
($direct, $err) = run('nn', q{INSERT INTO nn_feed VALUES (21, NULL, 2)});
like($err, qr/null value in column "v" of relation "nn" violates not-null constraint/,
	'a null for a NOT NULL column fails the run as an INSERT does');
is($node->safe_psql($db, q{SELECT count(*) FROM nn}), '20', 'and applies nothing');

done_testing();
