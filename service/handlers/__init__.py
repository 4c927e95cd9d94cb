"""HTTP handlers: decode the request, call one use case, render the answer."""
