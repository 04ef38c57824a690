/* interop/tf_checkpoint.h - TensorFlow's checkpoint formats, read behind
 * runtime/ckpt_reader.h and written by slim__tfw_*.
 *
 * V2 ("tensor bundle", TensorFlow >= 1.0's default): PREFIX.index is a table
 * (interop/tf_table.h) whose "" key holds a BundleHeaderProto (shard count,
 * endianness, version) and every other key a tensor's BundleEntryProto: its
 * dtype, shape, data shard, offset, size and the masked CRC-32C of its bytes
 * in PREFIX.data-SSSSS-of-NNNNN. Numbers are stored raw, little-endian;
 * strings as varint64 lengths, the masked CRC-32C of the lengths, then the
 * bytes. A partitioned variable's entry lists its slices, each stored under
 * the key EncodeTensorNameSlice(name, slice) (see slim__tf_slice_key).
 *
 * V1 (TF-Slim's 2016-2017 releases): one table whose "" key holds the
 * SavedTensorSliceMeta (every tensor's name, shape, type and slices) and
 * whose other keys, EncodeTensorNameSlice(name, slice), hold each slice's
 * values as a TensorProto's typed lists. A sharded V1 checkpoint is several
 * such files, PREFIX-SSSSS-of-NNNNN.
 *
 * TF2 object-based checkpoints are V2 bundles whose keys are object paths
 * (`layer/kernel/.ATTRIBUTES/VARIABLE_VALUE`); their entries are named by
 * the variables' own names from the _CHECKPOINTABLE_OBJECT_GRAPH tensor (or
 * the path without the suffix), slots as VAR/SLOT. */
#ifndef SLIM_INTEROP_TF_CHECKPOINT_H
#define SLIM_INTEROP_TF_CHECKPOINT_H

#include "interop/tf_table.h"
#include "runtime/ckpt_reader.h"

/* A DT_STRING scalar slim adds to the TensorFlow checkpoints it writes: its
 * run header (runtime/checkpoint.proto's CheckpointHeader), so that a run
 * resumes from them as from its own format. TensorFlow ignores it. */
#define SLIM__TF_HEADER_KEY "_SLIM_CHECKPOINT_HEADER"

/* c->path is the V2 prefix. */
slim_status slim__tfckpt_open_v2(slim__ckpt *c, slim_error *err);
/* c->path is a table file: a V1 checkpoint (or a V2 index without its
 * .index name, which is an error saying so). */
slim_status slim__tfckpt_open_table(slim__ckpt *c, slim_error *err);
/* c->path is the prefix of PREFIX-00000-of-NNNNN files; SLIM_ENOTFOUND
 * without a message when there are none. */
slim_status slim__tfckpt_open_v1_sharded(slim__ckpt *c, slim_error *err);

/* The same from memory (for the fuzzers): a V1 file, or a V2 index and its
 * single data shard. The buffers must outlive c. */
slim_status slim__tfckpt_open_mem(const void *table, size_t n, const void *data, size_t dn, bool v2,
                                  slim__ckpt **out, slim_error *err);

/* EncodeTensorNameSlice (TensorFlow's OrderedCode): 0, the name, the rank,
 * then each dimension's start and length (-1: the whole dimension). */
void slim__tf_slice_key(slim__buf *out, const char *name, int rank, const int64_t *start,
                        const int64_t *length);

/* ---- writing ------------------------------------------------------------ */

typedef enum slim__tfw_format { SLIM__TFW_V1 = 1, SLIM__TFW_V2 = 2 } slim__tfw_format;

typedef struct slim__tfw slim__tfw;

/* V2: path is the prefix (PREFIX.index and PREFIX.data-*); V1: the file.
 * Files are written under temporary names and renamed by finish (the V2
 * index last), so a failed write leaves no checkpoint behind. */
slim_status slim__tfw_new(const char *path, slim__tfw_format format, int num_shards,
                          slim__tfw **out, slim_error *err);
/* A whole tensor: numeric data as numel little-endian elements; strings as
 * numel u64 lengths then the bytes (slim__ckpt_read_raw's layout). Add
 * tensors in name order to write the data file in TensorFlow's order. */
slim_status slim__tfw_add(slim__tfw *w, const char *name, int dtype, int rank, const int64_t *dim,
                          const void *data, size_t len, slim_error *err);
/* One slice of a partitioned variable of full shape dim: start[d] and
 * length[d] per dimension (length -1: all of it); data holds the slice. */
slim_status slim__tfw_add_slice(slim__tfw *w, const char *name, int dtype, int rank,
                                const int64_t *dim, const int64_t *start, const int64_t *length,
                                const void *data, size_t len, slim_error *err);
/* Write the index (V2) or the table (V1) and rename everything into place;
 * frees w. */
slim_status slim__tfw_finish(slim__tfw *w, slim_error *err);
/* Abandon: removes the temporary files. */
void slim__tfw_free(slim__tfw *w);

#endif
