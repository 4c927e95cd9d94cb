"""Use cases of a tenant's own entries: config entries and permission policies."""
