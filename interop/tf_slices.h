/* interop/tf_slices.h - what TensorFlow's V1 and V2 readers share: tensor
 * slices (a partitioned variable's pieces), their keys (OrderedCode's
 * EncodeTensorNameSlice, in tf_checkpoint.h) and shapes, all checked against
 * the tensor they belong to. */
#ifndef SLIM_INTEROP_TF_SLICES_H
#define SLIM_INTEROP_TF_SLICES_H

#include "interop/tf_checkpoint.h"
#include "interop/tf_tensor.pb-c.h"

/* A tensor's slices: per slice the file holding it (V1 shards) and per
 * dimension its start and length (-1: the whole dimension). */
typedef struct slim__tf_slices {
    int n, rank;
    int *shard;     /* V1: which file holds slice i */
    int64_t *start; /* n * rank */
    int64_t *len;   /* n * rank, -1 = the whole dimension */
} slim__tf_slices;

void slim__tf_slices_free(slim__tf_slices *s);
/* e's rank, dims and element count from a TensorShapeProto (NULL: a scalar). */
slim_status slim__tf_set_shape(const char *file, const char *name,
                               const Tensorflow__TensorShapeProto *sp, slim__ckpt_entry *e,
                               slim_error *err);
/* Append n slices (from shard) to *s, allocated on first use. */
slim_status slim__tf_add_slices(const char *file, const char *name, int rank,
                                Tensorflow__TensorSliceProto **sp, size_t n, int shard,
                                slim__tf_slices **s, slim_error *err);
/* Slice i of e checked against e's shape: its extents (a whole dimension
 * resolved) and element count. */
slim_status slim__tf_slice_box(const char *file, const slim__ckpt_entry *e,
                               const slim__tf_slices *s, int i, int64_t *st, int64_t *ln,
                               int64_t *numel, slim_error *err);
/* The slices tile e: inside it, not overlapping, covering it. */
slim_status slim__tf_check_tiling(const char *file, const slim__ckpt_entry *e,
                                  const slim__tf_slices *s, slim_error *err);
/* Copy a slice (row-major, extents st/ln, es bytes per element) into the
 * full tensor dst of shape dim. */
void slim__tf_place(void *dst, const void *src, int rank, const int64_t *dim, const int64_t *st,
                    const int64_t *ln, int es);

/* The V1 back end on a table in memory (tf_checkpoint_v1.c). */
slim_status slim__tfckpt_open_v1_table(slim__ckpt *c, slim__tft *t, slim_error *err);

#endif
