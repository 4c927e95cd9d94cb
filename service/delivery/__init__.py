"""The delivery worker of every process: a loop that drives the delivery use case."""
