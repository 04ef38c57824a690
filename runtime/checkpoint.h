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

slim_status slim__rt_ckpt_save(const char *path, const slim__rt_ckpt_state *s, slim_error *err);

/* resume: parameters, slots, moving averages and the header fields into s
 * (every trainable parameter's slots must be there). Otherwise (fine-tuning,
 * evaluation): parameters only, with o's exclusions and EMA choice. */
slim_status slim__rt_ckpt_restore(const char *path, slim__rt_ckpt_state *s, bool resume,
                                  const slim_restore_opts *o, slim_error *err);

/* Checkpoints in dir, newest first: steps[i] and paths (each n bytes) for up
 * to max entries; returns how many (or -1 when dir cannot be read). */
int slim__rt_ckpt_list(const char *dir, int64_t *steps, char (*paths)[1024], int max);

/* Delete all but the newest keep checkpoints in dir (and stale temporary files). */
void slim__rt_ckpt_prune(const char *dir, int keep);

/* Does a parameter name fall under one of the comma-separated scopes? */
bool slim__rt_in_scopes(const char *name, const char *scopes);

#endif
