"""Token-bucket rate limiting: in-process buckets, or shared buckets in Redis."""
