/* runtime/session.h - what training, evaluation and profiling share: the
 * input (a pipeline, or synthetic data), the model and its programs, the
 * thread budget, moving averages, evaluation over a split. */
#ifndef SLIM_RUNTIME_SESSION_H
#define SLIM_RUNTIME_SESSION_H

#include <slim/data.h>
#include <slim/model.h>
#include <slim/train.h>

/* ---- input --------------------------------------------------------------------- */

typedef struct slim__rt_input_opts {
    const char *dataset_name, *dataset_dir, *split, *file_pattern, *recipe;
    bool is_training;
    int batch_size, image_size, channels;
    int num_threads, num_readers, shuffle_buffer;
    int labels_offset;
    uint64_t seed;
    int64_t num_epochs; /* 0 = forever */
    bool synthetic;
    int64_t synthetic_examples;
    int num_classes; /* synthetic labels */
    bool skip_damaged;
    bool grayscale; /* --use_grayscale */
    slim_pipeline_trace_fn trace;
    void *trace_user;
    int replica, replicas; /* training across processes: this one's share (slim_pipeline_opts) */
    bool replica_by_file;
} slim__rt_input_opts;

typedef struct slim__rt_input {
    slim_pipeline *pipe;
    /* synthetic data: example i of every epoch is a pure function of (seed, i) */
    bool synthetic;
    int n, h, w, c, classes;
    uint64_t seed;
    int64_t epoch_examples, consumed, num_epochs; /* consumed: by every replica */
    int replica, replicas;
    float *x;
    int32_t *y;
    double wait_total;
} slim__rt_input;

slim_status slim__rt_input_open(const slim__rt_input_opts *o, slim__rt_input *in, slim_error *err);
/* The next batch, as views valid until the next call (SLIM_BIND_ALIGN-aligned,
 * SLIM_BIND_SLACK bytes after them: slim__rt_feed binds them). */
slim_status slim__rt_input_next(slim__rt_input *in, const float **x, const int32_t **y,
                                slim_batch_info *bi, slim_error *err);
void slim__rt_input_position(const slim__rt_input *in, slim_pipeline_position *pos);
slim_status slim__rt_input_restore(slim__rt_input *in, const slim_pipeline_position *pos,
                                   slim_error *err);
/* Examples per epoch (0 = unknown). */
int64_t slim__rt_input_epoch_examples(const slim__rt_input *in);
void slim__rt_input_close(slim__rt_input *in);

/* What a dataset says before a pipeline exists: classes, epoch size, names. */
typedef struct slim__rt_data_desc {
    slim_dataset *ds; /* owned (NULL for synthetic or file patterns) */
    int num_classes;  /* 0 = unknown */
    int64_t num_examples;
    int image_height, image_width, channels;
    const char *const *label_names;
    const char *default_recipe;
} slim__rt_data_desc;
slim_status slim__rt_data_describe(const char *name, const char *dir, const char *split,
                                   slim__rt_data_desc *d, slim_error *err);
void slim__rt_data_desc_fini(slim__rt_data_desc *d);

/* ---- threads ------------------------------------------------------------------- */

/* Split the budget (0 = the machine's cores) between the model's threads and
 * the input workers (requested_input 0 = automatic). */
void slim__rt_thread_split(int total, int requested_input, bool light_input, int *model,
                           int *input);
int slim__rt_cores(void);

/* ---- models ------------------------------------------------------------------------ */

typedef struct slim__rt_model_req {
    const char *model_name, *model_path;
    const char *const *plugins;
    int n_plugins;
    int batch_size, num_classes, image_size;
    bool training;
    double label_smoothing, weight_decay;
    double aux_loss_weight;     /* < 0: the model file's */
    const char *const *defines; /* --set NAME=VALUE: the model file's vars */
    int n_defines;
} slim__rt_model_req;

/* Split s in place at its newlines into at most max strings (empty lines
 * skipped); returns how many. */
#define SLIM__RT_MAX_DEFINES 32
int slim__rt_split_lines(char *s, char **out, int max);

slim_status slim__rt_model_open(slim_registry *reg, const slim__rt_model_req *r, slim_model **out,
                                slim_error *err);

/* ---- moving averages (tf.train.ExponentialMovingAverage with num_updates) ------- */

typedef struct slim__rt_ema {
    int n;
    float **avg; /* per graph parameter */
    double decay;
} slim__rt_ema;
slim_status slim__rt_ema_init(slim__rt_ema *e, slim_graph *g, double decay, slim_error *err);
/* After the update of global step `step` (0-based): decay = min(decay, (1 + step) / (10 + step)).
 */
void slim__rt_ema_update(slim__rt_ema *e, slim_graph *g, int64_t step);
/* Exchange the parameters with their averages (evaluate with them, then swap back). */
void slim__rt_ema_swap(slim__rt_ema *e, slim_graph *g);
void slim__rt_ema_fini(slim__rt_ema *e);

/* ---- evaluation --------------------------------------------------------------------- */

/* Run p (compiled for inference; inputs "images" and maybe "labels", output
 * "logits") over every batch of in, or max_batches of them. */
slim_status slim__rt_evaluate(slim_program *p, slim__rt_input *in, int num_classes,
                              int64_t max_batches, const volatile int *stop, slim_eval_result *r,
                              slim_error *err);

/* Feed a batch from slim__rt_input_next to the program's inputs ("labels" only
 * when the program has it): bound in place (slim_program_bind_input), no copy;
 * copied only where binding is refused. */
slim_status slim__rt_feed(slim_program *p, const float *x, const int32_t *y, size_t x_count,
                          int batch, slim_error *err);

#endif
