-- Benchmark databases (bench/environment.py). Not loaded by the service.

-- name: database_ddl
-- Drop and create statements for database $1, its name quoted as an identifier.
SELECT format('DROP DATABASE IF EXISTS %I WITH (FORCE)', $1::text) AS drop_ddl,
       format('CREATE DATABASE %I', $1::text) AS create_ddl;

-- name: server_version
-- The server's version line, for the machine description.
SELECT version();
