/* runtime/ckpt_reader.h - open a checkpoint of any format slim reads and look
 * its tensors up by name: slim's own (runtime/checkpoint.proto), TensorFlow's
 * V1 (one table of tensor slices) and V2 (PREFIX.index + data shards; see
 * interop/tf_checkpoint.h).
 *
 * Every format is presented in TensorFlow's terms, which are TF-Slim's: a
 * variable's value under its name (`LeNet/conv1/weights`), its moving average
 * under `NAME/ExponentialMovingAverage`, an optimizer slot under
 * `NAME/Momentum`, `NAME/Adam`, `NAME/Adam_1` ..., and `global_step`. Each
 * entry says which of these it is (kind, var, slot), so restoring never
 * parses names twice.
 *
 * A path may be: a slim checkpoint file; a V1 file; a V2 prefix, its .index
 * or one of its data files; a sharded V1 prefix (PREFIX-00000-of-00002 ...);
 * or a directory: its newest checkpoint (model.ckpt-STEP.slimckpt or
 * model.ckpt-STEP.index), else the one its `checkpoint` state file names. */
#ifndef SLIM_RUNTIME_CKPT_READER_H
#define SLIM_RUNTIME_CKPT_READER_H

#include <slim/train.h>

#include "runtime/checkpoint.pb-c.h"

#include <stdbool.h>
#include <stdint.h>

#define SLIM__CKPT_MAX_RANK 32
/* The suffix of a moving average's name (TensorFlow's ExponentialMovingAverage). */
#define SLIM__CKPT_EMA_SUFFIX "/ExponentialMovingAverage"

/* TensorFlow's DataType numbers (tensorflow/core/framework/types.proto). */
enum {
    SLIM__DT_FLOAT = 1,
    SLIM__DT_DOUBLE = 2,
    SLIM__DT_INT32 = 3,
    SLIM__DT_UINT8 = 4,
    SLIM__DT_INT16 = 5,
    SLIM__DT_INT8 = 6,
    SLIM__DT_STRING = 7,
    SLIM__DT_COMPLEX64 = 8,
    SLIM__DT_INT64 = 9,
    SLIM__DT_BOOL = 10,
    SLIM__DT_BFLOAT16 = 14,
    SLIM__DT_UINT16 = 17,
    SLIM__DT_COMPLEX128 = 18,
    SLIM__DT_HALF = 19,
    SLIM__DT_UINT32 = 22,
    SLIM__DT_UINT64 = 23,
};
/* Bytes per element (0: strings, or a type slim cannot hold). */
int slim__dt_size(int dtype);
/* "float", "int64", ... ("dtype 42" for others, in a static buffer). */
const char *slim__dt_name(int dtype);
/* Readable as f32: float, half, bfloat16, double. */
bool slim__dt_is_real(int dtype);

typedef enum slim__ckpt_format {
    SLIM__CKPT_SLIM = 1,
    SLIM__CKPT_TF_V1,
    SLIM__CKPT_TF_V2,
} slim__ckpt_format;

typedef enum slim__ckpt_kind {
    SLIM__CK_VALUE, /* a variable: weights, biases, batch-norm beta/gamma/moving statistics */
    SLIM__CK_EMA,   /* var's ExponentialMovingAverage shadow */
    SLIM__CK_SLOT,  /* an optimizer slot of var */
    SLIM__CK_OPT,   /* other optimizer state (Adam's beta1_power, a TF2 optimizer's iterations) */
    SLIM__CK_STEP,  /* global_step */
    SLIM__CK_META,  /* bookkeeping: TF2's object graph, slim's run header */
} slim__ckpt_kind;

typedef struct slim__ckpt_entry {
    char *name; /* in TensorFlow's terms (see above) */
    char *key;  /* the key in the file when it differs from name (TF2), else NULL */
    int dtype;
    int rank;
    int64_t dim[SLIM__CKPT_MAX_RANK];
    int64_t numel;
    int64_t stored; /* bytes in the file */
    slim__ckpt_kind kind;
    char *var;      /* EMA, SLOT: the variable's name */
    char *slot;     /* SLOT: TensorFlow's slot variable suffix ("Momentum", "Adam_1") or a
                       TF2 / slim slot name ("m") */
    int slot_index; /* SLOT: its place in the optimizer's slots (Adam_1: 1), -1 unknown */
    int n_slices;   /* a partitioned variable's slices (0: stored whole) */
    /* where the bytes are (each format's own meaning) */
    int64_t off, len;
    int shard;
    uint32_t crc;
    void *priv;
} slim__ckpt_entry;

typedef struct slim__ckpt slim__ckpt;

/* Open (resolving path as above; ckpt_open.c). Errors name the file, and for damaged
 * files the byte offset and the check that failed. */
slim_status slim__ckpt_open(const char *path, slim__ckpt **out, slim_error *err);
void slim__ckpt_close(slim__ckpt *c);

/* The file that was opened (a V2 checkpoint: its prefix). */
const char *slim__ckpt_path(const slim__ckpt *c);
slim__ckpt_format slim__ckpt_format_of(const slim__ckpt *c);
/* "slim", "TensorFlow V1 (1 file)", "TensorFlow V2 (1 shard, index blocks snappy-compressed)" */
const char *slim__ckpt_describe(const slim__ckpt *c);
/* slim's run header: from a slim file, or the _SLIM_CHECKPOINT_HEADER tensor
 * slim writes into TensorFlow checkpoints; NULL for others. */
const Slimckpt__CheckpointHeader *slim__ckpt_header(const slim__ckpt *c);
/* global_step (-1 when the checkpoint has none). */
int64_t slim__ckpt_global_step(const slim__ckpt *c);
/* Whether any entry is a moving average. */
bool slim__ckpt_has_ema(const slim__ckpt *c);

/* Entries sorted by name. */
int slim__ckpt_count(const slim__ckpt *c);
const slim__ckpt_entry *slim__ckpt_at(const slim__ckpt *c, int i);
/* Index of name, or -1. */
int slim__ckpt_find(const slim__ckpt *c, const char *name);

/* Entry i as f32 (from float, half, bfloat16 or double): n must be its
 * element count. Checksums are checked on every read. */
slim_status slim__ckpt_read_f32(slim__ckpt *c, int i, float *dst, int64_t n, slim_error *err);
/* Entry i in its own type, little-endian, numel * slim__dt_size bytes into a
 * new buffer; strings: numel u64 lengths then the bytes. */
slim_status slim__ckpt_read_raw(slim__ckpt *c, int i, void **data, size_t *len, slim_error *err);
/* SLIM_ECORRUPT when entry i claims more bytes than its files can hold (a
 * damaged shape or size): call before allocating for it. */
slim_status slim__ckpt_check_size(slim__ckpt *c, int i, slim_error *err);
/* Read every entry once (checksums, slices, string framing). */
slim_status slim__ckpt_verify_all(slim__ckpt *c, slim_error *err);

/* The checkpoint a TensorFlow `checkpoint` state file in dir names
 * (model_checkpoint_path, relative to dir). */
slim_status slim__ckpt_state_file(const char *dir, char *path, size_t n, slim_error *err);

/* ---- for the format back ends ------------------------------------------- */

typedef struct slim__ckpt_ops {
    /* numeric: numel * dt_size bytes into dst; strings: the u64 lengths and
     * bytes appended to out (dst NULL) */
    slim_status (*read)(slim__ckpt *c, const slim__ckpt_entry *e, void *dst, void *out,
                        slim_error *err);
    void (*close)(slim__ckpt *c);
    /* At most how many bytes reading e can produce, from the sizes of the
     * files that hold it (checked before anything is allocated). */
    int64_t (*bound)(slim__ckpt *c, const slim__ckpt_entry *e);
} slim__ckpt_ops;

struct slim__ckpt {
    const slim__ckpt_ops *ops;
    slim__ckpt_format format;
    char *path;
    char desc[160];
    slim__ckpt_entry *e;
    int n, cap;
    Slimckpt__CheckpointHeader *header;
    int64_t global_step;
    void *impl;
};

/* slim's own format (ckpt_slim.c); TensorFlow's: interop/tf_checkpoint.h. */
slim_status slim__ckpt_open_slim(slim__ckpt *c, slim_error *err);
/* An empty checkpoint named path (for the back ends' open functions). */
slim_status slim__ckpt_new(const char *path, slim__ckpt **out, slim_error *err);
/* A new entry (zeroed; name copied) at the end; NULL when out of memory. */
slim__ckpt_entry *slim__ckpt_add(slim__ckpt *c, const char *name);
/* Sort, reject duplicate names, classify TensorFlow names (EMA, slots,
 * global_step, ...) and read global_step and slim's header. */
slim_status slim__ckpt_finish(slim__ckpt *c, bool classify, slim_error *err);
/* Element count of a shape, or -1 when a dimension is negative or it
 * overflows. */
int64_t slim__ckpt_numel(int rank, const int64_t *dim);

/* TensorFlow's optimizer names for slim's update ops ("momentum_update" ->
 * "Momentum"), NULL for none; and slot k's variable suffix ("Adam", "Adam_1"). */
const char *slim__tf_optimizer_name(const char *update_op);
void slim__tf_slot_suffix(const char *update_op, int k, char *buf, size_t n);

#endif
