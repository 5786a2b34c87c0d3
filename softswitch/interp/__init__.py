"""interp."""
