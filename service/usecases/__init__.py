"""Use cases: each public method is one request's work and opens its one transaction."""
