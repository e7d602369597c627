
# Flows made before autocdc flattened domains (0.2) whose sequence reads
# another role's domain (bob's feeds): their catalog's seq_type/sysseq_type, the
# target's period columns and the hidden state's sequence columns carry
# it.  bob then adds a CHECK to his domain that notes current_user; the
# next run as alice must not run it as alice.  The run flattens the columns
# to the base type and records it, or, where the periods' index uses a
# range type over the domain, refuses with a hint and applies nothing.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use AutocdcTest;

my $node = autocdc_node('old_sequence_types');

sub sql { return $node->safe_psql('postgres', $_[0]); }
sub as { my ($role, $q) = @_; return $node->safe_psql('postgres', "SET ROLE $role; $q"); }

sql(q{
	CREATE EXTENSION autocdc;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE SCHEMA alice AUTHORIZATION alice;
	CREATE SCHEMA bob AUTHORIZATION bob;
	GRANT USAGE ON SCHEMA bob TO alice;
});
as('bob', q{
	CREATE TABLE bob.seen (what text, who text);
	GRANT INSERT ON bob.seen TO PUBLIC;
	CREATE FUNCTION bob.chk(v anyelement) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN INSERT INTO bob.seen VALUES ('check', current_user); RETURN true; END $$;
	CREATE DOMAIN bob.seqd AS int;
	CREATE DOMAIN bob.sseqd AS smallint;
	CREATE TABLE bob.feed (id int, v text, seq bob.seqd, sseq bob.seqd);
	CREATE TABLE bob.feed3 (id int, v text, seq bob.sseqd);
	GRANT SELECT ON ALL TABLES IN SCHEMA bob TO alice;
	INSERT INTO bob.feed VALUES (1, 'a', 1, 1), (2, 'b', 1, 1);
	INSERT INTO bob.feed3 VALUES (1, 'a', 1);
});
as('alice', q{
	SELECT autocdc.create_flow('alice.o2', 'bob.feed', '{id}', 'seq', stored_as_scd_type => '2',
							   except_column_list => '{seq,sseq}', continuous => false);
	SELECT autocdc.create_flow('alice.ob', 'bob.feed', '{id}', 'seq', stored_as_scd_type => 'bitemporal',
							   system_sequence_by => 'sseq', except_column_list => '{seq,sseq}',
							   continuous => false);
	SELECT autocdc.create_flow('alice.o3', 'bob.feed3', '{id}', 'seq', stored_as_scd_type => '2',
							   except_column_list => '{seq}', continuous => false);
	SELECT * FROM autocdc.run_flow('o2');
	SELECT * FROM autocdc.run_flow('ob');
	SELECT * FROM autocdc.run_flow('o3');
});

# the hidden state of target $t
sub state_of
{
	return 'autocdc_state.target_' . sql(qq{SELECT id FROM autocdc.target WHERE relid = '$_[0]'::regclass});
}

# the types of $t's period columns and of its hidden state's sequence
# columns, "col:type,..." sorted (state columns named by their table)
sub types_of
{
	my ($t) = @_;
	my $rows = sql(qq{SELECT attrelid::regclass || '.' || attname || ':' || format_type(atttypid, atttypmod)
		FROM pg_attribute WHERE attrelid IN ('$t'::regclass, '} . state_of($t) . q{'::regclass)
		  AND attname IN ('__start_at', '__end_at', '__system_start_at', '__system_end_at',
						  '__autocdc_seq', '__autocdc_sysseq') AND NOT attisdropped});
	return join(',', sort split(/\n/, $rows));
}

# --- turn them into flows made by 0.2 -----------------------------------------
my ($s2, $sb, $s3) = map { state_of($_) } qw(alice.o2 alice.ob alice.o3);
sql(qq{
	ALTER TABLE alice.o2 ALTER COLUMN __start_at TYPE bob.seqd, ALTER COLUMN __end_at TYPE bob.seqd;
	ALTER TABLE $s2 ALTER COLUMN __autocdc_seq TYPE bob.seqd;
	UPDATE autocdc.target SET seq_type = 'bob.seqd' WHERE relid = 'alice.o2'::regclass;
	ALTER TABLE alice.ob ALTER COLUMN __start_at TYPE bob.seqd, ALTER COLUMN __end_at TYPE bob.seqd,
		ALTER COLUMN __system_start_at TYPE bob.seqd, ALTER COLUMN __system_end_at TYPE bob.seqd;
	ALTER TABLE $sb ALTER COLUMN __autocdc_seq TYPE bob.seqd, ALTER COLUMN __autocdc_sysseq TYPE bob.seqd;
	UPDATE autocdc.target SET seq_type = 'bob.seqd', sysseq_type = 'bob.seqd' WHERE relid = 'alice.ob'::regclass;
});
# o3: a smallint sequence has a range type of its own; 0.2 made it, with
# the index of the periods that every SCD 2 target had then, over the domain
sql(qq{
	ALTER TABLE alice.o3 ALTER COLUMN __start_at TYPE bob.sseqd, ALTER COLUMN __end_at TYPE bob.sseqd;
	ALTER TABLE $s3 ALTER COLUMN __autocdc_seq TYPE bob.sseqd;
	CREATE TYPE alice.o3_seqrange AS RANGE (SUBTYPE = bob.sseqd);
	ALTER TYPE alice.o3_seqrange OWNER TO alice;
	CREATE INDEX ON alice.o3 USING gist (alice.o3_seqrange(__start_at, __end_at)) WHERE __end_at IS NOT NULL;
	UPDATE autocdc.target SET seq_type = 'bob.sseqd', range_typname = 'o3_seqrange' WHERE relid = 'alice.o3'::regclass;
});
as('bob', q{
	ALTER DOMAIN bob.seqd ADD CHECK (bob.chk(VALUE)) NOT VALID;
	ALTER DOMAIN bob.sseqd ADD CHECK (bob.chk(VALUE)) NOT VALID;
	TRUNCATE bob.seen;
	INSERT INTO bob.feed VALUES (1, 'x', 2, 2), (3, 'c', 2, 2);
	INSERT INTO bob.feed3 VALUES (1, 'x', 2);
});

# as_of's indexes over bob's domain would run his CHECK as alice: refused
my ($iret, $iout, $ierr) = $node->psql('postgres', q{SET ROLE alice; SELECT autocdc.create_as_of_index('alice.o2')});
like($ierr, qr/ERROR:  the periods of target "o2" have type bob\.seqd, which carries a domain of role bob/,
	"create_as_of_index refuses periods of another role's domain");
is(sql(q{SELECT count(*) FROM pg_index WHERE indrelid = 'alice.o2'::regclass AND NOT indisunique}), '0',
	'... creating nothing');

# --- the next runs, as alice ----------------------------------------------------
as('alice', q{SELECT * FROM autocdc.run_flow('o2'); SELECT * FROM autocdc.run_flow('ob')});
is(sql(q{SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM bob.seen WHERE who <> 'bob'}), '',
	"bob's CHECK did not run as alice");
is(types_of('alice.o2'), "alice.o2.__end_at:integer,alice.o2.__start_at:integer,$s2.__autocdc_seq:integer",
	'the period and sequence columns of the SCD 2 flow were flattened');
as('alice', q{SELECT autocdc.create_as_of_index('alice.o2')});
is(sql(q{SELECT count(*) FROM pg_index WHERE indrelid = 'alice.o2'::regclass AND NOT indisunique}), '2',
	'once flattened, create_as_of_index makes the indexes');
is(types_of('alice.ob'),
	"alice.ob.__end_at:integer,alice.ob.__start_at:integer,alice.ob.__system_end_at:integer,"
	  . "alice.ob.__system_start_at:integer,$sb.__autocdc_seq:integer,$sb.__autocdc_sysseq:integer",
	'so were the bitemporal flow\'s');
is(sql(q{SELECT string_agg(relid::regclass || ':' || seq_type || ':' || coalesce(sysseq_type::text, '-'), ','
		ORDER BY relid::regclass::text COLLATE "C") FROM autocdc.target WHERE relid IN ('alice.o2'::regclass, 'alice.ob'::regclass)}),
	'alice.o2:integer:-,alice.ob:integer:integer', 'and the sequence types recorded');
is(sql(q{SELECT string_agg(id || v || __start_at || coalesce(__end_at::text, '-'), ',' ORDER BY id, __start_at) FROM alice.o2}),
	'1a12,1x2-,2b1-,3c2-', 'the SCD 2 flow applied the new events');
is(sql(q{SELECT count(*) FROM alice.ob WHERE __system_end_at IS NULL}), '4', 'and the bitemporal one');

my ($ret, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SELECT * FROM autocdc.run_flow('o3')});
like($err, qr/ERROR:  flow "o3": the index of the periods of target "alice\.o3" uses range type alice\.o3_seqrange, which carries a domain of role bob/,
	'a range type over the domain cannot be flattened: the run is refused');
like($err, qr/HINT:  Drop that index/, '... with a hint');
is(sql(q{SELECT count(*) FROM alice.o3}), '1', '... and applies nothing');
like(types_of('alice.o3'), qr/__start_at:bob\.sseqd/, '... altering nothing');
is(sql(q{SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM bob.seen WHERE who <> 'bob'}), '',
	"bob's CHECK did not run as alice");
sql(q{SELECT format('DROP INDEX %s', indexrelid::regclass) FROM pg_index i JOIN pg_class c ON c.oid = indexrelid
	WHERE indrelid = 'alice.o3'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'gist')} . "\\gexec");
as('alice', q{SELECT * FROM autocdc.run_flow('o3')});
is(sql(q{SELECT count(*) FROM alice.o3}), '2', 'without the index the run flattens and applies');
is(sql(q{SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM bob.seen WHERE who <> 'bob'}), '',
	"bob's CHECK did not run as alice");

$node->stop;
done_testing();
