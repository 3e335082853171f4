"""The package version (pyproject.toml's), in a module of its own so that modules below the
package's __init__ (the compiler backend's cache key) can read it without importing upward."""

__version__ = "0.1.0"
