"""kvfabric: steer KV-cache transfers onto the least-loaded paths of a P4 leaf-spine fabric."""

__version__ = "0.1.0"
