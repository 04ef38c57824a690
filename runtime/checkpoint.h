/* runtime/checkpoint.h - checkpoint files (format in runtime/checkpoint.proto).
 *
 * Saving writes PATH.tmp-PID through the TFRecord writer, fsyncs, renames it
 * to PATH and fsyncs the directory: a crash or a full disk leaves the previous
 * checkpoints as they were. Restoring first verifies every record of the file
 * (checksums and the footer), so a corrupt file never half-applies. */
#ifndef SLIM_RUNTIME_CHECKPOINT_H
#define SLIM_RUNTIME_CHECKPOINT_H

#include <slim/data.h>
#include <slim/train.h>

#include "runtime/checkpoint.pb-c.h"

/* What a checkpoint holds, and where restoring puts it. */
typedef struct slim__rt_ckpt_state {
    slim_graph *g;
    slim_program *p; /* optimizer slots come from here (NULL = none) */
    int n_slots;
    const char *const *slot_names; /* n_slots names ("momentum", "m", "v", ...) */
    float **ema;                   /* per graph parameter index, or NULL */
    /* header */
    int64_t global_step;
    uint64_t seed;
    const char *model_name, *optimizer, *run_config;
    int num_classes, num_threads, batch_size;
    int replicas; /* processes, batch_size each (restore: 1 when the file does not say) */
    /* input shared by file: every process's position, 3 values each (epoch,
     * index, consumed); restore allocates rpos (the caller frees it) */
    bool by_file;
    int n_rpos;
    int64_t *rpos;
    slim_pipeline_position pos;
    bool has_pos;
    bool has_ema; /* restore: the file had moving averages */
} slim__rt_ckpt_state;

/* "DIR/model.ckpt-STEP.slimckpt" */
void slim__rt_ckpt_path(const char *dir, int64_t step, char *path, size_t n);
/* "DIR/model.ckpt-STEP": a TensorFlow V2 checkpoint's prefix (--save_format=tf) */
void slim__rt_ckpt_tf_prefix(const char *dir, int64_t step, char *path, size_t n);

slim_status slim__rt_ckpt_save(const char *path, const slim__rt_ckpt_state *s, slim_error *err);
/* The same as a TensorFlow V2 checkpoint at prefix (--save_format=tf): the
 * parameters by their names, slots as NAME/Momentum, NAME/Adam, NAME/Adam_1
 * ..., moving averages as NAME/ExponentialMovingAverage, global_step, and the
 * run header as the string tensor _SLIM_CHECKPOINT_HEADER; then the
 * directory's `checkpoint` state file. */
slim_status slim__rt_ckpt_save_tf(const char *prefix, const slim__rt_ckpt_state *s,
                                  slim_error *err);

/* The directory's TensorFlow `checkpoint` state file, naming its newest
 * model.ckpt-STEP.index (and all of them), for TensorFlow's tools. */
slim_status slim__rt_ckpt_write_state_file(const char *dir, slim_error *err);
/* The shape TensorFlow gives parameter name: slim's own, except a depthwise
 * filter (KH,KW,1,C*M) -> (KH,KW,C*M,1) (the same values; TF-Slim's shape for
 * depth_multiplier 1). */
void slim__tf_shape_of(const char *name, const slim_shape *s, int *rank, int64_t *dim);

/* Writing slim's format record by record (saving, and `slimrun ckpt
 * convert`): open with the header (n_tensors set), add exactly that many
 * tensors, close (footer, fsync, rename into place). On failure the
 * temporary file is removed and earlier checkpoints are intact. */
typedef struct slim__rt_ckpt_writer slim__rt_ckpt_writer;
slim_status slim__rt_ckpt_writer_open(const char *path, const Slimckpt__CheckpointHeader *h,
                                      slim__rt_ckpt_writer **out, slim_error *err);
/* kind: SLIMCKPT__TENSOR_KIND__PARAM, __SLOT (slot name and index), __EMA */
slim_status slim__rt_ckpt_writer_add(slim__rt_ckpt_writer *w, const char *name, int kind,
                                     const char *slot, int slot_index, int rank, const int64_t *dim,
                                     const float *data, bool trainable, slim_error *err);
slim_status slim__rt_ckpt_writer_close(slim__rt_ckpt_writer *w, slim_error *err);
void slim__rt_ckpt_writer_abort(slim__rt_ckpt_writer *w);
/* The header of state s with n_tensors tensors (strings borrowed from s). */
void slim__rt_ckpt_header(const slim__rt_ckpt_state *s, int n_tensors,
                          Slimckpt__CheckpointHeader *h);
/* fsync the directory of path (after a rename into it). */
void slim__rt_fsync_dir(const char *path);

/* resume: parameters, slots, moving averages and the header fields into s
 * (every trainable parameter's slots must be there). Otherwise (fine-tuning,
 * evaluation): parameters only, with o's exclusions and EMA choice. */
slim_status slim__rt_ckpt_restore(const char *path, slim__rt_ckpt_state *s, bool resume,
                                  const slim_restore_opts *o, slim_error *err);

/* The names of checkpoint files in a train_dir: PREFIX STEP SUFFIX (slim's),
 * PREFIX STEP TF_SUFFIX (TensorFlow's V2 index). */
#define SLIM__CKPT_PREFIX "model.ckpt-"
#define SLIM__CKPT_SUFFIX ".slimckpt"
#define SLIM__CKPT_TF_SUFFIX ".index"

/* Checkpoints in dir (slim's model.ckpt-STEP.slimckpt and TensorFlow's
 * model.ckpt-STEP.index), newest first: steps[i] and paths (each n bytes) for
 * up to max entries; returns how many (or -1 when dir cannot be read). */
int slim__rt_ckpt_list(const char *dir, int64_t *steps, char (*paths)[1024], int max);

/* Delete all but the newest keep checkpoints in dir (and stale temporary files). */
void slim__rt_ckpt_prune(const char *dir, int keep);

#endif
