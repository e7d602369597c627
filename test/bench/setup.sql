-- autocdc benchmark: objects of one measurement database (see bench.sh).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION autocdc;
\ir results.sql

-- The events of one scenario, in arrival order (ord).  Sequence numbers of the
-- batch are 10 * (prepop + i); pre-existing rows have seq = key (< 10 * prepop).
CREATE TABLE ev (k bigint, a text, b int, c numeric, op text, seq bigint, ord bigint);

/*
 * bench_gen(n, p): fill ev with n events against a key space where keys 1..p
 * already exist: 50% inserts of new keys, 35% in-order updates and 10%
 * deletes of keys existing at that point (chosen uniformly), and 5% late
 * updates: for a random in-order update at sequence s, an update at s - 5 that
 * arrives after it (1..2000 events later).  Deterministic (setseed).
 */
CREATE FUNCTION bench_gen(n int, p bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	n_late int := n / 20;
	n_ins int := n / 2;
	n_del int := n / 10;
	n_upd int := n - n / 2 - n / 10 - n / 20;
	rem_i int; rem_u int; rem_d int;
	live bigint[];
	nlive bigint := p;
	nextk bigint := p + 1;
	ks bigint[] := '{}';
	ops text[] := '{}';
	seqs bigint[] := '{}';
	ords bigint[] := '{}';
	uk bigint[] := '{}';
	us bigint[] := '{}';
	nu int := 0;
	cnt int := 0;
	m int;
	r float8;
	j bigint;
	k bigint;
	s bigint;
	t text;
	x int;
BEGIN
	PERFORM setseed(0.42);
	TRUNCATE ev;
	live := CASE WHEN p > 0 THEN (SELECT array_agg(g) FROM generate_series(1, p) g)
			ELSE '{}'::bigint[] END;
	rem_i := n_ins; rem_u := n_upd; rem_d := n_del;
	FOR i IN 1 .. n_ins + n_upd + n_del LOOP
		s := 10 * (p + i);
		r := random() * (rem_i + rem_u + rem_d);
		IF nlive = 0 OR r < rem_i THEN
			IF rem_i = 0 THEN RAISE EXCEPTION 'bench_gen: no live key'; END IF;
			rem_i := rem_i - 1;
			k := nextk; nextk := nextk + 1;
			nlive := nlive + 1; live[nlive] := k;
			t := 'INSERT';
		ELSIF r < rem_i + rem_u THEN
			rem_u := rem_u - 1;
			k := live[1 + floor(random() * nlive)::bigint];
			nu := nu + 1; uk[nu] := k; us[nu] := s;
			t := 'UPDATE';
		ELSE
			rem_d := rem_d - 1;
			j := 1 + floor(random() * nlive)::bigint;
			k := live[j];
			live[j] := live[nlive]; nlive := nlive - 1;
			t := 'DELETE';
		END IF;
		cnt := cnt + 1;
		ks[cnt] := k; ops[cnt] := t; seqs[cnt] := s; ords[cnt] := s;
	END LOOP;
	-- late updates: each for a distinct in-order update
	FOR x IN SELECT g FROM generate_series(1, nu) g ORDER BY random() LIMIT n_late LOOP
		cnt := cnt + 1;
		ks[cnt] := uk[x]; ops[cnt] := 'UPDATE'; seqs[cnt] := us[x] - 5;
		ords[cnt] := us[x] + 10 * (1 + floor(random() * 2000)::bigint) + 5;
	END LOOP;
	INSERT INTO ev
	SELECT u.k,
		   CASE WHEN u.op <> 'DELETE' THEN 'v' || substr(md5(u.seq::text), 1, 16) END,
		   CASE WHEN u.op <> 'DELETE' THEN (u.seq % 100003)::int END,
		   CASE WHEN u.op <> 'DELETE' THEN (u.seq % 99991) / 100.0 END,
		   u.op, u.seq, u.ord
	  FROM unnest(ks, ops, seqs, ords) AS u(k, op, seq, ord);
	ANALYZE ev;
END $$;
