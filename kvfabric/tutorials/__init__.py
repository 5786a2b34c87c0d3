"""p4lang/tutorials run unmodified on kvfabric: the exercises' checks and their runner."""
