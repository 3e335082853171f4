"""Triton language modules of the mps backend (substituted for Triton's through get_module_map)."""
