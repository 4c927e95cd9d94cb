"""Database access: the SQL file loader, migrations, the pool and transactions."""
