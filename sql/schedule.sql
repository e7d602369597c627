--
-- schedule: when a failed flow runs again.  A failed run counts one more
-- retry and sets retry_at to its time plus 2^n seconds, n being the failed
-- runs since the last good one, capped at 8 (1 s, 2 s, 4 s ... 256 s); a
-- good run clears both.
--
CREATE FUNCTION s_fail(flow text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM * FROM autocdc.run_flow(flow);
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END
$f$;
CREATE TABLE s_feed (k int, v text, seq int);
CREATE TABLE s_ok_feed (k int, v text, seq int);
SELECT autocdc.create_flow('s_bad', 's_feed', '{k}', 'seq', continuous => false);
SELECT autocdc.create_flow('s_ok', 's_ok_feed', '{k}', 'seq', continuous => false);
-- first reads (the first run creates the slot, in a transaction of its own)
SELECT num_events FROM autocdc.run_flow('s_ok');
SELECT num_events FROM autocdc.run_flow('s_bad');
-- a null sequence fails every run of s_bad
INSERT INTO s_feed VALUES (1, 'a', NULL);
-- s_bad fails after n failed runs (the retries it shows); a run of s_ok
-- writes the failure down
CREATE FUNCTION s_back_off(n int, OUT retries int, OUT back_off interval) LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE autocdc.flow_state SET retries = n WHERE name = 's_bad';
	IF s_fail('s_bad') <> '22004' THEN
		RAISE 'the run of s_bad did not fail with a null sequence';
	END IF;
	PERFORM * FROM autocdc.run_flow('s_ok');
	SELECT s.retries, s.retry_at - s.last_error_at INTO retries, back_off
	  FROM autocdc.flow_state s WHERE s.name = 's_bad';
END
$f$;
SELECT n AS failed_before, b.* FROM unnest('{0,1,2,3,7,8,9,30}'::int[]) n, LATERAL s_back_off(n) b;
-- the view shows the same retry time
SELECT f.retry_at = s.retry_at AS view_shows_retry_at, f.retry_at > f.last_error_at AS later
  FROM autocdc.flows f JOIN autocdc.flow_state s USING (name) WHERE name = 's_bad';
-- skip_events clears the back-off; a good run clears the retries
SELECT autocdc.skip_events('s_bad', pg_current_wal_lsn());
SELECT retries, retry_at FROM autocdc.flow_state WHERE name = 's_bad';
SELECT num_events FROM autocdc.run_flow('s_bad');
SELECT retries, retry_at, last_error FROM autocdc.flow_state WHERE name = 's_bad';
SELECT autocdc.drop_flow('s_bad');
SELECT autocdc.drop_flow('s_ok');
DROP TABLE s_feed, s_ok_feed, s_bad, s_ok;
DROP FUNCTION s_fail(text), s_back_off(int);
