"""Change requests: reviewed lists of changes applied in one transaction."""
