"""One typed view per response shape: msgspec Structs that render the body (and, for
tenants and contexts, the ETag) and describe it in the OpenAPI document."""
