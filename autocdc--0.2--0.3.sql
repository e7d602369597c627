/* autocdc--0.2--0.3.sql — upgrade of autocdc from 0.2 to 0.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.3'" to load this file. \quit
