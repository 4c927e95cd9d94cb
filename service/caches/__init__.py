"""Per-process caches of the API keys and the hottest reads, shared by auth and use cases."""
