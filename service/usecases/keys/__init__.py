"""Use cases of API keys and roles."""
