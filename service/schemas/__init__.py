"""Request bodies and query strings as msgspec types: decoding is validation."""
