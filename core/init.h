/* core/init.h - parameter initializers (slim_init) filling a tensor. */
#ifndef SLIM_CORE_INIT_H
#define SLIM_CORE_INIT_H

#include <slim/slim.h>

/* data (the shape's numel floats) as init says; values depend only on seed. */
void slim__init_fill(const slim_init *init, const slim_shape *s, float *data, uint64_t seed);

#endif
