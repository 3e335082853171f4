// Stand-in for <dispatch/dispatch.h> on Linux (csrc/metal_emu/): the types metal-cpp declares
// methods with. Nothing of libdispatch is implemented; no method we emulate takes these.
#pragma once

typedef struct dispatch_queue_s* dispatch_queue_t;
typedef struct dispatch_data_s* dispatch_data_t;
typedef struct dispatch_group_s* dispatch_group_t;
typedef struct dispatch_semaphore_s* dispatch_semaphore_t;
