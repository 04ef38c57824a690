/*
 * slim/train.h - training, evaluation, checkpoints: what TF-Slim's
 * train_image_classifier.py and eval_image_classifier.py do, as a library.
 *
 *   slim_train_config c;  slim_train_config_init(&c);     TF-Slim's defaults
 *   c.model_name = "lenet";  c.dataset_name = "fashion_mnist";  c.dataset_dir = ...;
 *   c.train_dir = "/tmp/lenet";  c.optimizer = "momentum";  ...
 *   c.on_progress = print_line;  c.stop = &interrupted;   (set from a signal handler)
 *   slim_train(&c, &result, &err);
 *
 * Restarting slim_train with the same train_dir resumes from the newest valid
 * checkpoint there (parameters, optimizer slots, moving averages, batch-norm
 * statistics, the global step and the input position): the same seed and
 * thread count give the same weights as an uninterrupted run.
 *
 * The library never prints: progress, notices and evaluation results go to the
 * callbacks; errors come back as a status and a message.
 */
#ifndef SLIM_TRAIN_H
#define SLIM_TRAIN_H

#include "slim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- evaluation results ---------------------------------------------------- */

typedef struct slim_eval_result {
    int64_t global_step; /* of the checkpoint evaluated (-1 = the live weights) */
    int64_t n_examples;
    int num_classes;
    double top1, top5; /* accuracy in [0, 1] */
    double loss;       /* mean softmax cross entropy (no regularization) */
    double seconds;
    bool used_ema;          /* moving-average weights were evaluated */
    int64_t *class_total;   /* [num_classes] examples per true class */
    int64_t *class_correct; /* [num_classes] top-1 hits per true class */
    int64_t *confusion;     /* [num_classes * num_classes]: row = true, column = predicted */
    const char *const *label_names; /* num_classes entries or NULL (borrowed from the dataset) */
    char checkpoint[1024];
} slim_eval_result;
SLIM_EXPORT void slim_eval_result_fini(slim_eval_result *r);

/* ---- training ------------------------------------------------------------------ */

typedef struct slim_train_progress {
    int64_t step, max_steps; /* steps done; max_steps 0 = no limit */
    double epoch;            /* examples seen / examples per epoch */
    double loss, accuracy;   /* means over the steps since the last report */
    double grad_norm;        /* with clip_gradient_norm: the global gradient norm before clipping,
                              * mean since the last report; NaN without */
    double learning_rate;
    double images_per_sec; /* since the last report */
    double input_wait;     /* fraction of the time spent waiting for input, since the last report */
    double eta_seconds;    /* < 0 = unknown */
    double elapsed;        /* seconds since this run started */
    /* across processes: their number (1 alone), and the fraction of the time
     * spent waiting for the gradient allreduces and the other collectives
     * (mean over the processes, since the last report); images_per_sec, loss
     * and accuracy are over all of them */
    int processes;
    double comm_wait;
    /* per step, means since the last report: the training thread blocked on
     * communication, and the gradient allreduces on the wire (the part not
     * waited for hid behind backward) */
    double comm_wait_seconds, allreduce_seconds;
    /* per step, mean since the last report: the CPU time of the process,
     * every thread (mean over the processes) */
    double cpu_seconds;
} slim_train_progress;

typedef void (*slim_train_progress_fn)(const slim_train_progress *p, void *user);
/* Notices: "resuming from ...", "checkpoint saved", warnings. level: SLIM_LOG_*. */
typedef void (*slim_train_message_fn)(int level, const char *msg, void *user);
typedef void (*slim_train_eval_fn)(const slim_eval_result *r, void *user);

typedef struct slim_train_config {
    /* model: a zoo name (--model_name) or a file (--model) */
    const char *model_name;
    const char *model_path;
    const char *const *plugins;
    int n_plugins;
    int num_classes;      /* 0 = the dataset's */
    int train_image_size; /* 0 = the model's default */
    /* "NAME=VALUE" overrides of the model file's vars: (depth_multiplier=0.5,
     * slimrun's --set), recorded in the checkpoints' run_config */
    const char *const *defines;
    int n_defines;

    /* data */
    const char *dataset_name;
    const char *dataset_dir;
    const char *dataset_split_name; /* "train" */
    const char *file_pattern;       /* instead of a named dataset: shards/globs */
    const char *preprocessing_name; /* recipe; NULL = the model's (TF-Slim's factory) */
    bool use_grayscale; /* TF-Slim's: gray before the recipe's normalization (every channel) */
    int batch_size;     /* 32 */
    int labels_offset;
    int num_readers;               /* 4 */
    int num_preprocessing_threads; /* 0 = auto (a share of num_threads) */
    int shuffle_buffer;            /* 0 = the pipeline's default */
    bool synthetic;                /* random images and labels (throughput, tests) */
    int64_t synthetic_examples;    /* epoch size of the synthetic data (default 1024) */
    /* A damaged record or image: false (default) stops with its file and
     * offset; true skips it (counted in the result, a copy of another
     * example of its batch takes its place). */
    bool skip_damaged;

    /* the run */
    const char *train_dir;
    int64_t max_number_of_steps; /* 0 = none (then num_epochs, else forever) */
    double num_epochs;           /* 0 = none */
    int num_threads;             /* the whole budget: model threads + input workers; 0 = cores */
    uint64_t seed;

    /* optimizer (TF-Slim's names and defaults) */
    const char *optimizer; /* adadelta|adagrad|adam|ftrl|momentum|sgd|rmsprop ("rmsprop") */
    double adadelta_rho;   /* 0.95 */
    double adagrad_initial_accumulator_value; /* 0.1 */
    double adam_beta1, adam_beta2;            /* 0.9, 0.999 */
    double opt_epsilon;                       /* 1.0 */
    double ftrl_learning_rate_power;          /* -0.5 */
    double ftrl_initial_accumulator_value;    /* 0.1 */
    double ftrl_l1, ftrl_l2;                  /* 0, 0 */
    double momentum;                          /* 0.9 */
    bool use_nesterov;
    double rmsprop_momentum, rmsprop_decay; /* 0.9, 0.9 */
    /* > 0: scale every gradient by clip / max(global norm, clip) before the
     * updates, the norm taken over all trained gradients together
     * (tf.clip_by_global_norm, TF-Slim's create_train_op); 0 = off */
    double clip_gradient_norm;

    /* learning rate */
    const char *learning_rate_decay_type; /* fixed|exponential|polynomial|cosine ("exponential") */
    double learning_rate;                 /* 0.01 */
    double end_learning_rate;             /* 0.0001: polynomial's end, cosine's floor */
    double learning_rate_decay_factor;    /* 0.94 */
    double num_epochs_per_decay;          /* 2.0 */
    bool staircase;                       /* exponential: true (TF-Slim) */
    double warmup_epochs;                 /* linear warm-up from 0; 0 = none */

    /* regularization */
    double weight_decay;         /* 0.00004; < 0 = the model file's */
    double label_smoothing;      /* 0 */
    double aux_loss_weight;      /* the auxiliary head's loss weight; < 0 (default): the
                                  * model file's head: aux_weight (0.4 in the zoo) */
    double moving_average_decay; /* 0 = no moving averages */

    /* checkpoints */
    double save_interval_secs;   /* 600 */
    int64_t save_interval_steps; /* 0 = by time only */
    int max_checkpoints_to_keep; /* 5 */
    const char *save_format;     /* "slim" (NULL: model.ckpt-STEP.slimckpt) or "tf"
                                  * (TensorFlow V2: model.ckpt-STEP.index/.data-*) */
    const char *checkpoint_path; /* fine-tune from (file or directory) */
    const char *checkpoint_exclude_scopes;
    const char *checkpoint_assignment_map; /* slim_restore_opts.assignment_map */
    const char *trainable_scopes;
    /* Batch norm outside trainable_scopes: false (default) frozen (moving
     * statistics, kept); true as TF-Slim: batch statistics, moving averages
     * updated (slim_compile_opts.train_frozen_batch_norm) */
    bool train_frozen_batch_norm;
    bool ignore_missing_vars;

    /* reporting */
    int64_t log_every_n_steps;   /* 10 */
    double save_summaries_secs;  /* 600 (TensorBoard scalars also every log step) */
    int64_t eval_every_n_steps;  /* 0 = none */
    const char *eval_split_name; /* NULL = the dataset's eval split */
    const char *trace_path;      /* Chrome trace-event JSON, or NULL */
    int trace_steps;             /* steps traced (default 50) */

    /* callbacks (may be NULL) */
    slim_train_progress_fn on_progress;
    slim_train_message_fn on_message;
    slim_train_eval_fn on_eval;
    void *user;
    /* After every step (and its checkpoint, if one was due); may be NULL. */
    void (*on_step)(int64_t global_step, void *user);
    /* Set non-zero (from a signal handler) to stop after the current step
     * with a checkpoint. */
    const volatile int *stop;
    /* The effective settings as text (one "flag=value" a line), stored in
     * checkpoints for people reading them later; may be NULL. */
    const char *run_config;
    /* Across processes (started by mpirun; see slim_dist_available): batch_size
     * is per process, the gradients are averaged over all of them. */
    double collective_timeout;   /* seconds a collective may wait for the others (300) */
    double allreduce_bucket_mb;  /* gradient bucket size in MB (0 = the default, 8) */
    bool no_overlap;             /* allreduce after backward instead of during it */
    bool sync_batch_norm;        /* batch statistics over the global batch */
    int64_t replica_check_steps; /* compare the weights' checksums every N steps (100; 0 = never) */
    /* how the processes share the input: "record" (blocks of the one stream
     * one process would read: the same batches), "file" (each its own
     * files: less to read, its own order), NULL or "auto" = file with at
     * least 8 files per process, else record */
    const char *input_sharding;
} slim_train_config;

/* TF-Slim's defaults for every field. */
SLIM_EXPORT void slim_train_config_init(slim_train_config *c);

typedef struct slim_train_result {
    int64_t global_step; /* at the end */
    int64_t start_step;  /* where this run began (> 0 after resuming) */
    bool interrupted;    /* stopped by *stop */
    double final_loss;   /* mean over the last log period */
    double seconds;
    double images_per_sec;
    char last_checkpoint[1024];
    int64_t skipped;       /* damaged records skipped (skip_damaged) in this run */
    char first_skip[1024]; /* the first one's file, offset and reason */
} slim_train_result;

SLIM_EXPORT slim_status slim_train(const slim_train_config *c, slim_train_result *res,
                                   slim_error *err);

/* ---- training across processes (MPI) ----------------------------------------
 * A process that mpirun (or another MPI launcher) started as one of several
 * trains its share: slim_train joins the others (MPI_Init the first time),
 * every process computes the gradients of its own batch_size examples, the
 * gradients are averaged across the processes, and rank 0 alone writes
 * checkpoints, metrics and traces. A process started any other way trains
 * alone, without MPI. */
/* Whether this build has MPI (configure found it). */
SLIM_EXPORT bool slim_dist_available(void);
/* The rank an MPI launcher (mpirun, mpiexec, srun) gave this process, or -1
 * when none started it; *size: the number of processes (1 then). From the
 * environment, so callable before slim_train (to keep ranks > 0 quiet). */
SLIM_EXPORT int slim_dist_launcher_rank(int *size);
/* Call once before a process that slim_train joined to others exits
 * (slimrun does): MPI_Finalize, unless a run lost its peers. A no-op when
 * MPI was never started. */
SLIM_EXPORT void slim_dist_finalize(void);

/* ---- profiling (slimrun profile) ------------------------------------------------ */

typedef struct slim_profile_op {
    const char *name; /* node (or parameter for updates) */
    const char *op;
    int phase;     /* 0 forward, 1 backward, 2 update, 3 gradient sum */
    double ms;     /* mean per step */
    double gflops; /* GFLOP/s where the op's work is known (conv, fc), else 0 */
} slim_profile_op;

typedef struct slim_profile_report {
    int steps, batch_size, model_threads, input_threads;
    double step_ms;    /* mean wall time per step */
    double compute_ms; /* of which the model ran */
    double wait_ms;    /* of which it waited for input */
    double wait_fraction;
    double phase_ms[4]; /* forward, backward, update, gradient sums */
    double images_per_sec;
    double input_images_per_sec; /* what the pipeline alone delivers (stage time / workers) */
    double stage_ms[8];          /* per example, summed over workers, by slim_stage */
    int n_ops;
    slim_profile_op *ops; /* sorted by time, slowest first */
    char *strings;        /* owns the ops' names */
    bool input_bound;
    char verdict[1024]; /* the summary and what to change */
} slim_profile_report;

/* Run c's training setup for warmup + steps steps (no checkpoints written)
 * and time it. */
SLIM_EXPORT slim_status slim_profile(const slim_train_config *c, int warmup, int steps,
                                     slim_profile_report *r, slim_error *err);
SLIM_EXPORT void slim_profile_report_fini(slim_profile_report *r);

/* ---- evaluation ------------------------------------------------------------------ */

typedef struct slim_eval_config {
    const char *model_name, *model_path;
    const char *const *plugins;
    int n_plugins;
    /* eval_image_size 0: the size the checkpoint was trained at (its
     * --train_image_size), else the model's */
    int num_classes, eval_image_size;
    /* "NAME=VALUE" overrides of the model's vars:; none given: the checkpoint's
     * (slim_checkpoint_info.defines) */
    const char *const *defines;
    int n_defines;
    const char *checkpoint_path; /* file, or a train_dir (newest checkpoint) */
    const char *eval_dir;        /* metrics.jsonl and event files; NULL = none */
    const char *dataset_name, *dataset_dir, *dataset_split_name, *file_pattern;
    const char *preprocessing_name;
    bool use_grayscale;      /* as slim_train_config's */
    int batch_size;          /* 100 */
    int64_t max_num_batches; /* 0 = the whole split */
    int labels_offset;
    int num_threads; /* 0 = cores */
    int num_preprocessing_threads;
    int use_ema; /* -1 auto (when present), 0 no, 1 required */
    /* slim_restore_opts.assignment_map */
    const char *checkpoint_assignment_map;
    bool watch;                /* wait for new checkpoints in checkpoint_path */
    double eval_interval_secs; /* 60: how often to look while watching */
    double timeout_secs;       /* stop watching after this long without a new one; 0 = never */
    bool synthetic;
    int64_t synthetic_examples;
    slim_train_message_fn on_message;
    slim_train_eval_fn on_eval;
    void *user;
    const volatile int *stop;
} slim_eval_config;

SLIM_EXPORT void slim_eval_config_init(slim_eval_config *c);
/* Evaluate once (watch false: r is the result) or watch (on_eval per checkpoint). */
SLIM_EXPORT slim_status slim_eval(const slim_eval_config *c, slim_eval_result *r, slim_error *err);

/* ---- checkpoints ------------------------------------------------------------------ */

/* The newest checkpoint in dir that passes its checksums, in path; corrupt
 * newer ones are reported through skipped (may be NULL, n_skipped lines). */
SLIM_EXPORT slim_status slim_checkpoint_latest(const char *dir, char *path, size_t n, char *skipped,
                                               size_t n_skipped, slim_error *err);

typedef struct slim_restore_opts {
    const char *exclude_scopes; /* comma-separated prefixes not restored */
    bool ignore_missing_vars;   /* parameters absent from the file keep their values */
    int use_ema;                /* -1 auto: moving averages when present, 0 no, 1 required */
    char *report;               /* filled with what was skipped/excluded (may be NULL) */
    size_t report_size;
    /* "CKPT_SCOPE=MODEL_SCOPE,...": parameters under MODEL_SCOPE come from the
     * checkpoint's CKPT_SCOPE ("/" or "" = the root; TensorFlow's
     * init_from_checkpoint assignment_map). NULL: names as they are. */
    const char *assignment_map;
} slim_restore_opts;

typedef struct slim_checkpoint_info {
    int64_t global_step;
    uint64_t seed;
    int n_tensors;
    bool has_ema;
    int num_classes;
    char model_name[128], optimizer[64];
    /* From the run's flags (its run_config): --train_image_size (0 when not
     * given: the model's default), and its --set overrides of the model's
     * vars, "NAME=VALUE" a line ("" when none) */
    int image_size;
    char defines[512];
} slim_checkpoint_info;

/* Restore the graph's parameters from a checkpoint: slim's, or TensorFlow's
 * V1 / V2 (a file, a V2 prefix or .index, or a directory: its newest), by
 * TF-Slim's variable names. */
SLIM_EXPORT slim_status slim_checkpoint_restore(const char *path, slim_graph *g,
                                                const slim_restore_opts *o,
                                                slim_checkpoint_info *info, slim_error *err);
/* Check every record of a checkpoint file (CRC, footer) and read its header. */
SLIM_EXPORT slim_status slim_checkpoint_verify(const char *path, slim_checkpoint_info *info,
                                               slim_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SLIM_TRAIN_H */
