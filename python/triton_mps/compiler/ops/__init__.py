"""Op lowerings: importing a module registers its ops in lowering.LOWERINGS."""

from . import (  # noqa: F401
    control_flow,
    debug,
    dot,
    dot_scaled,
    elementwise,
    float64,
    layout_conversion,
    libdevice,
    memory,
    reduce,
    shape,
)
