"""Plumbing every use case shares: dependencies, change recording, tenant access, idempotency."""
