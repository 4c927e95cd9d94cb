"""Webhooks: URL safety, signing, the HTTP sender and the delivery workers."""
