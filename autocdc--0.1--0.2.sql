/* autocdc--0.1--0.2.sql — upgrade of autocdc from 0.1 to 0.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.2'" to load this file. \quit
