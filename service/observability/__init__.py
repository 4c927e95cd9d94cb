"""Logs, log lines, metrics, request figures and traces."""
