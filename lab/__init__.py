"""lab: the emulated leaf-spine fabric (Mininet) and the experiment that runs on it."""
