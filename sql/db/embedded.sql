-- The embedded PostgreSQL of the demo and the tests (src/db/embedded.ts), on its admin database.
-- {{database}} is substituted as a quoted identifier.

-- name: database_exists
SELECT 1 FROM pg_database WHERE datname = $1;

-- name: create_database
CREATE DATABASE {{database}};
