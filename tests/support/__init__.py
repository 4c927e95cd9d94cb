"""Test helpers: databases, keys, HTTP shortcuts and the tree invariants."""
