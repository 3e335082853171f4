"""Op lowerings: importing a module registers its ops in lowering.LOWERINGS."""

from . import control_flow, debug, dot, dot_scaled, elementwise, layout_conversion, memory, reduce, shape  # noqa: F401
