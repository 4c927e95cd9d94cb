"""Use cases of tenants: creation, changes, moves, reads and the resolved context."""
