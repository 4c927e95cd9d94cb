"""Use cases of webhooks: subscriptions, deliveries and their administration."""
