-- The source table of changes_bench.sh and the writes every measurement makes
-- to it (psql -v rows=N).  Loaded the same way into every database of the
-- benchmark (the subscriber's copy included): the rows are a function of the
-- key, so a freshly loaded table is the same everywhere.
CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL, note text, updated timestamptz NOT NULL);
INSERT INTO accounts
SELECT g, g % 1000, 'account ' || g, timestamptz '2024-01-01 00:00+00' + g * interval '1 second'
  FROM generate_series(1, :rows) g;

-- ntx transactions of per_tx single-row changes each, the same on every call
-- for the same arguments: in every ten changes 3 inserts of new keys (above
-- nrows), 5 updates (one in five of a key inserted earlier by this call, the
-- others of a pseudo-random original key not divisible by 5, so that keys
-- repeat within and across transactions) and 2 deletes (distinct original
-- keys divisible by 5, which no update touches).  Every statement changes
-- exactly one row (nchanged counts them).  Returns where the last transaction
-- began in the WAL (every earlier commit ends at or before it, the last one
-- after it) and the xid of the last transaction.
CREATE PROCEDURE changes_writes(nrows int, ntx int, per_tx int,
	INOUT last_start pg_lsn DEFAULT NULL, INOUT last_xid text DEFAULT NULL,
	INOUT nchanged bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	k bigint := 0;	-- changes so far
	u bigint := 0;	-- updates so far
	ni int := 0;	-- inserts so far
	nd bigint := 0;	-- deletes so far
	key int;
	n int;
BEGIN
	nchanged := 0;
	FOR t IN 1..ntx LOOP
		IF t = ntx THEN
			last_start := pg_current_wal_insert_lsn();
		END IF;
		FOR j IN 1..per_tx LOOP
			k := k + 1;
			IF k % 10 IN (0, 3, 6) THEN
				ni := ni + 1;
				INSERT INTO accounts (id, balance, note, updated) VALUES (nrows + ni, 0, 'opened ' || ni, now());
				GET DIAGNOSTICS n = ROW_COUNT;
			ELSIF k % 10 IN (5, 8) THEN
				nd := nd + 1;
				DELETE FROM accounts WHERE id = 5 * (1 + (nd * 7919) % (nrows / 5));
				GET DIAGNOSTICS n = ROW_COUNT;
			ELSE
				u := u + 1;
				IF u % 5 = 0 AND ni > 0 THEN
					key := nrows + 1 + (u * 7919) % ni;
				ELSE
					key := 1 + (u * 2654435761) % nrows;
					IF key % 5 = 0 THEN
						key := key - 1;
					END IF;
				END IF;
				UPDATE accounts SET balance = balance + (k % 101)::int - 50, note = 'changed ' || k, updated = now()
				 WHERE id = key;
				GET DIAGNOSTICS n = ROW_COUNT;
			END IF;
			nchanged := nchanged + n;
		END LOOP;
		IF t = ntx THEN
			last_xid := pg_current_xact_id()::xid::text;
		END IF;
		COMMIT;
	END LOOP;
END $$;

-- wait (polling every 10 ms, at most limit_s seconds) until the replication
-- origin has applied a commit that ends after lsn
CREATE PROCEDURE changes_wait_origin(origin text, lsn pg_lsn, limit_s int)
LANGUAGE plpgsql AS $$
DECLARE
	deadline timestamptz := clock_timestamp() + limit_s * interval '1 second';
BEGIN
	LOOP
		EXIT WHEN pg_replication_origin_progress(origin, false) > lsn;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'origin % did not pass % within % s (at %)', origin, lsn, limit_s,
				pg_replication_origin_progress(origin, false);
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;

-- md5 of the rows in key order: the check that two tables hold the same
CREATE FUNCTION changes_md5(tbl regclass, filter text DEFAULT 'true') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE format($q$SELECT md5(coalesce(string_agg(concat_ws('|', id, balance, note, updated), E'\n' ORDER BY id), ''))
					  FROM %s WHERE %s$q$, tbl, filter) INTO r;
	RETURN r;
END $$;
