"""Scheduled work of every service process: expiring overrides and change requests."""
