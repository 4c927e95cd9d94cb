"""What runs around every route's handler: the pipeline (pipeline.py) and what it learns
of a request (exchange.py, clients.py), and the aiohttp middlewares of writes: the
bulkhead, and the data layers (consistency token, read-your-writes, Idempotency-Key)."""
