"""Errors, ids, time formats, durations, encryption, ETags: used by every layer."""
