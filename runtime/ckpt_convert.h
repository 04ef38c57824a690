/* runtime/ckpt_convert.h - converting checkpoints between slim's format and
 * TensorFlow's V1 and V2 (`slimrun ckpt convert`). */
#ifndef SLIM_RUNTIME_CKPT_CONVERT_H
#define SLIM_RUNTIME_CKPT_CONVERT_H

#include <slim/slim.h>

/* Read `in` (any format slim reads) and write `out` as format "slim", "v1"
 * or "v2" (NULL: slim when out ends in .slimckpt, else v2 with out as the
 * prefix; out may end in .index). TensorFlow output keeps every tensor's name
 * (TF-Slim's), adds global_step and slim's run header (_SLIM_CHECKPOINT_HEADER)
 * when the source is slim's, and gives depthwise filters TF-Slim's shape;
 * v2 writes `shards` data files. slim output keeps what slim can hold (real
 * tensors of rank <= 6: values, moving averages, slots of a known optimizer,
 * whose slot names come from reg's update op); what it drops is listed in
 * notes. */
slim_status slim__ckpt_convert(const char *in, const char *out, const char *format, int shards,
                               const slim_registry *reg, char *notes, size_t n_notes,
                               slim_error *err);

#endif
