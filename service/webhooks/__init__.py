"""Webhook transport: URL safety, signing, the event envelope and the HTTP sender."""
