/* Redis keys to docraft partitions: the pure functions live in
 * common/redis_slot.h (shared with the routing client); this header keeps
 * the redis layer's name for them. */
#ifndef DOCRAFT_REDIS_SLOT_H
#define DOCRAFT_REDIS_SLOT_H

#include "common/redis_slot.h"

#endif
