-- autocdc benchmark: the results table (every measurement database, and the report's)
-- one row per measured statement
CREATE TABLE bench_results (
	id		serial PRIMARY KEY,
	prepop	bigint NOT NULL,	-- rows in the target before the measured run
	gen		bigint,				-- the events are those generated for a target of this size
	rep		int,				-- repetition of the whole benchmark (1..BENCH_REPEAT)
	n		bigint NOT NULL,	-- events in the measured batch
	method	text NOT NULL,		-- merge | autocdc_scd1 | autocdc_scd2 (| ... preload)
	secs	float8 NOT NULL,
	events	bigint,				-- num_events reported by run_flow
	upserted bigint,
	deleted bigint,
	wal_written bigint,			-- WAL bytes written by the measured statement
	wal_decoded bigint,			-- WAL bytes from the slot's restart_lsn to the end of the load
	wal_confirmed bigint,		-- WAL bytes from the slot's confirmed_flush_lsn to the end of the load
	wal_loaded bigint,			-- WAL bytes written by loading the events
	check_result text,			-- 'ok' or what differed
	result_md5 text				-- md5 of the resulting (current) rows, compared across methods
);

