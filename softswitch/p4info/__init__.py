"""p4info."""
