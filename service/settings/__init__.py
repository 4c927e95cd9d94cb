"""Settings: the service's configuration from the environment."""
