// Stand-in for <mach/mach.h> on Linux (csrc/metal_emu/): the types metal-cpp names.
#pragma once

#include <stdint.h>

typedef unsigned int mach_port_t;
typedef int kern_return_t;
typedef unsigned int task_id_token_t;
