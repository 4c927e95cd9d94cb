"""aiohttp plumbing: app keys, request decoding, responses, routing and middlewares."""
