/* datasets/pipeline.h - the pipeline's state, shared by pipeline.c (workers,
 * batches, the API) and sequence.c (sources and the example sequence). */
#ifndef SLIM_DATASETS_PIPELINE_H
#define SLIM_DATASETS_PIPELINE_H

#include "datasets/dataset.h"
#include "datasets/prep.h"

#include <pthread.h>

#define MAX_SKIP_MSGS 16

typedef struct source {
    char *path;
    bool image; /* one example = the whole file */
    int label;  /* image files: from the class folder, else -1 */
} source;

/* An open uncompressed shard, shared by its reader and its pending items. */
typedef struct shard {
    int fd;
    int refs; /* atomic */
} shard;

typedef struct item {
    int src;
    int64_t record, offset;
    uint64_t len;
    uint8_t *bytes; /* compressed shards: payload (owned) */
    shard *sh;      /* uncompressed: pread at offset + 12 */
    int64_t epoch, index;
} item;

typedef struct rslot {
    bool active;
    int src;
    slim_tfrecord_reader *r;
    shard *sh;
    bool image_done;
} rslot;

typedef struct seqgen {
    int64_t epoch, index; /* of the next output */
    bool started;
    int *order;
    int n_order; /* sources of this epoch (this replica's share by file) */
    int next_shard;
    rslot *rs;
    int R, rr;
    item *buf;
    int n, cap;
    bool input_done;
} seqgen;

typedef struct slot {
    int64_t batch; /* -1 = unused */
    int filled;
    int64_t epoch, index; /* first example */
    float *images;
    int32_t *labels;
    bool *valid;
} slot;

typedef struct worker {
    struct slim_pipeline *p;
    int id;
    pthread_t th;
    slim__prep_scratch *scratch;
    uint8_t *buf;
    size_t cap;
    size_t last_len; /* bytes of the last example read */
} worker;

struct slim_pipeline {
    slim_pipeline_opts o;
    char *s_pattern, *s_name, *s_dir, *s_split, *s_recipe, *s_rdir, *s_ikey, *s_lkey;
    slim_dataset *ds;
    const slim_dataset_info *info;
    slim__recipe *recipe;
    slim__prep prep;
    const char *image_key, *label_key, *format_key;
    source *src;
    int n_src;
    int N, H, W, C;
    size_t img_elems; /* H * W * C */
    /* state below under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv_space, cv_ready;
    seqgen gen;
    slot *slots;
    int nslots;
    int64_t next_claim; /* number of the next example to claim (this process's, since restore) */
    int64_t consumed;   /* batches released by the caller (since restore) */
    /* the stream of the run, all replicas together: the position where
     * this process's batches begin (0, or a restored position) and the
     * number of the next example the sequence yields */
    int64_t stream_base, stream_next;
    bool view_out; /* a next_view batch is still with the caller */
    bool end_known;
    int64_t total; /* examples in the whole run, once end_known */
    bool stop;
    slim_error error; /* first fatal error */
    bool failed;
    worker *workers;
    int nw;
    bool running;
    slim_pipeline_stats st;
    char *skip_msgs[MAX_SKIP_MSGS];
    int n_skip_msgs;
    double t_start;
};

/* sequence.c (called with mu held, except build_sources at creation) */
slim_status slim__seq_build_sources(slim_pipeline *p, slim_error *err);
slim_status slim__seq_next(slim_pipeline *p, item *out, bool *end, slim_error *err);
void slim__seq_clear(seqgen *g);
void slim__seq_item_free(item *it);
void slim__seq_skip_note(slim_pipeline *p, const slim_error *e);

#endif
