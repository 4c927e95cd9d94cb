"""The admin console: static files (HTML, ES modules, CSS) served at /console."""
