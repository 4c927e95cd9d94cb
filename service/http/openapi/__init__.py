"""The OpenAPI document: generated from the endpoint declarations (document.py), its
schemas (schemas.py), the parts every operation shares (components.py), and examples,
links and webhooks (extras.py)."""
