-- Server-level statements for the embedded PostgreSQL the service starts itself.

-- name: service_database_exists :value
-- Whether the service's database exists on this server.
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'tenant_service') AS present;

-- name: create_service_database :exec
-- Create the service's database (embedded server, first start).
CREATE DATABASE tenant_service;
