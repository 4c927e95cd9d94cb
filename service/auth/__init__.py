"""Authentication (API keys, JWT) and authorization (scopes, admin routes, subtrees)."""
