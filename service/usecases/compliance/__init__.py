"""Use cases of compliance: audit, consents, export and purge, regions, retention, key rotation."""
