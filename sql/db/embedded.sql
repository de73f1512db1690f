-- The embedded PostgreSQL of the demo and the tests (src/db/embedded.ts), on its admin database.
-- {{database}} is substituted as a quoted identifier.

-- name: database_exists
SELECT 1 FROM pg_database WHERE datname = $1;

-- name: create_database
CREATE DATABASE {{database}};

-- name: set_password
-- A utility statement takes no parameters: embedded.ts puts the new password in as a quoted literal.
ALTER ROLE {{user}} PASSWORD :password;
