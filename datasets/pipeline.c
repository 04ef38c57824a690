/* datasets/pipeline.c - shards -> example sequence -> workers -> batches.
 *
 * The example sequence of an epoch is a pure function of (seed, epoch): the
 * shard order is shuffled by (seed, epoch), num_readers shards are read
 * interleaved one record at a time (round robin, a finished shard's slot
 * takes the next shard), and a shuffle buffer of shuffle_buffer records
 * picks its output with a counter-based draw (seed, epoch, index). Image
 * files count as one-record shards. Reading the sequence is cheap: for an
 * uncompressed shard only the 12-byte headers are read here (the payloads
 * are read and CRC-checked by the workers with pread); compressed shards
 * are inflated in order and their records carried in the buffer.
 *
 * Workers (num_threads) each claim the next example (its global number g
 * fixes batch g / N and slot g % N), preprocess it straight into that slot of
 * a ring of prefetch batches, and count it done. Claims block while the
 * batch would be more than the ring ahead of the caller. So batches are
 * bit-identical at any thread count. A corrupt example under on_error skip
 * is marked invalid and replaced, when the batch is handed out, by a copy of
 * the next valid example in the same batch (deterministic, static shapes). */
#include "datasets/pipeline.h"
#include "datasets/tfrecord.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const stage_names[SLIM_STAGE_COUNT] = {"read",  "decode", "crop", "resize",
                                                          "color", "batch",  "wait"};

const char *slim_stage_name(slim_stage s)
{
    return (unsigned)s < SLIM_STAGE_COUNT ? stage_names[s] : "?";
}

/* With replicas sharing the stream by blocks: the blocks of batch_size
 * between two of this process's batches (1 alone or sharing by file). */
static int blocks_apart(const slim_pipeline *p)
{
    return p->o.replicas > 1 && !p->o.replica_by_file ? p->o.replicas : 1;
}

/* ---- one example (worker, without mu) ---------------------------------------- */

static slim_status read_item(worker *w, const item *it, const uint8_t **data, size_t *len,
                             slim_error *err)
{
    slim_pipeline *p = w->p;
    const source *s = &p->src[it->src];
    w->last_len = 0;
    if (it->bytes) {
        *data = it->bytes;
        *len = (size_t)it->len;
        return SLIM_OK;
    }
    size_t need;
    int fd = -1;
    off_t at;
    if (s->image) {
        fd = open(s->path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) < 0) {
            slim_status st = slim__data_error(err, SLIM_EIO, s->path, "%s: cannot open: %s",
                                              s->path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return st;
        }
        need = (size_t)sb.st_size;
        at = 0;
    } else {
        fd = it->sh->fd;
        need = (size_t)it->len + 4;
        at = (off_t)(it->offset + 12);
    }
    if (need + 1 > w->cap) {
        uint8_t *nb = realloc(w->buf, need + need / 4 + 64);
        if (!nb) {
            if (s->image)
                close(fd);
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        }
        w->buf = nb;
        w->cap = need + need / 4 + 64;
    }
    w->last_len = need;
    size_t got = 0;
    while (got < need) {
        ssize_t r = pread(fd, w->buf + got, need - got, at + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (s->image)
                close(fd);
            return slim__data_error(err, r < 0 ? SLIM_EIO : SLIM_ECORRUPT, s->path,
                                    "%s: byte %lld: %s", s->path, (long long)(at + (off_t)got),
                                    r < 0 ? strerror(errno) : "file shrank while reading");
        }
        got += (size_t)r;
    }
    if (s->image) {
        close(fd);
        *data = w->buf;
        *len = need;
        return SLIM_OK;
    }
    slim_status st = slim__tfrecord_check_data(s->path, it->record, it->offset, w->buf,
                                               (size_t)it->len, w->buf + it->len, err);
    *data = w->buf;
    *len = (size_t)it->len;
    return st;
}

static slim_status process(worker *w, const item *it, float *dst, int32_t *label, prep_trace *tr,
                           slim_error *err)
{
    slim_pipeline *p = w->p;
    const source *s = &p->src[it->src];
    double t0 = slim__now();
    const uint8_t *data = NULL;
    size_t len = 0;
    slim_status st = read_item(w, it, &data, &len, err);
    if (st)
        return st;
    char name[600];
    prep_input in = {.data = data, .len = len};
    slim_example *ex = NULL;
    int64_t lab = s->label;
    if (s->image) {
        snprintf(name, sizeof name, "%s", s->path);
    } else {
        snprintf(name, sizeof name, "%s: record %lld at byte %lld", s->path, (long long)it->record,
                 (long long)it->offset);
        st = slim_example_parse(data, len, &ex, err);
        if (st) {
            slim__error_prefix(err, "%s: ", name);
            if (err)
                snprintf(err->file, sizeof err->file, "%s", s->path);
            return st;
        }
        const int64_t *lv;
        size_t nl;
        slim_status ls = slim_example_int64s(ex, p->label_key, &lv, &nl);
        if (ls || nl < 1) {
            slim_example_free(ex);
            return slim__data_error(
                err, SLIM_ECORRUPT, s->path, "%s: %s key '%s'%s", name,
                ls == SLIM_ETYPE ? "not an int64 list:" : "missing", p->label_key,
                ls == SLIM_ETYPE ? "" : " (set keys: {label: ...} in the recipe)");
        }
        lab = lv[0];
        if (p->prep.wants_boxes) {
            st = slim__bbox_from_example(ex, p->recipe->bbox_key, &in.boxes, name, s->path, err);
            if (st) {
                slim_example_free(ex);
                return st;
            }
        }
        const uint8_t *img;
        size_t ilen;
        ls = slim_example_bytes(ex, p->image_key, 0, &img, &ilen);
        if (ls == SLIM_ETYPE) { /* a float list: raw float pixels (e.g. TFX's image_floats) */
            const float *fv;
            size_t nf;
            slim_example_floats(ex, p->image_key, &fv, &nf);
            const int *sh = p->recipe->image_shape;
            in.data = (const uint8_t *)fv;
            in.len = nf * sizeof(float);
            in.raw = in.raw_f32 = true;
            if (sh[0]) {
                in.raw_h = sh[0], in.raw_w = sh[1], in.raw_c = sh[2];
            } else {
                int side = (int)lround(sqrt((double)nf));
                in.raw_h = in.raw_w = side;
                in.raw_c = 1;
            }
        } else if (ls) {
            slim_example_free(ex);
            return slim__data_error(err, SLIM_ECORRUPT, s->path,
                                    "%s: missing key '%s' (set keys: {image: ...} in the recipe)",
                                    name, p->image_key);
        } else {
            in.data = img;
            in.len = ilen;
            const uint8_t *fmt;
            size_t flen;
            if (!slim_example_bytes(ex, p->format_key, 0, &fmt, &flen) && flen == 3 &&
                !strncasecmp((const char *)fmt, "raw", 3)) {
                const int64_t *v;
                size_t nv;
                in.raw = true;
                in.raw_h = !slim_example_int64s(ex, "image/height", &v, &nv) && nv ? (int)v[0] : 0;
                in.raw_w = !slim_example_int64s(ex, "image/width", &v, &nv) && nv ? (int)v[0] : 0;
                in.raw_c =
                    !slim_example_int64s(ex, "image/channels", &v, &nv) && nv ? (int)v[0] : 0;
                if (!in.raw_c && in.raw_h > 0 && in.raw_w > 0)
                    in.raw_c = (int)(ilen / ((size_t)in.raw_h * in.raw_w));
            }
        }
    }
    lab -= p->o.labels_offset;
    int nc = p->info->num_classes;
    if (s->image && s->label == -1)
        lab = 0; /* loose images without class folders */
    if (lab < 0 || (nc > 0 && lab >= nc)) {
        slim_example_free(ex);
        return slim__data_error(err, SLIM_ECORRUPT, s->path,
                                "%s: label %lld is outside [0, %d) (stored %lld, labels_offset %d)",
                                name, (long long)lab, nc, (long long)(lab + p->o.labels_offset),
                                p->o.labels_offset);
    }
    in.name = name;
    double t1 = slim__now();
    st = slim__prep_run(&p->prep, w->scratch, &in, p->o.seed, it->epoch, it->index, dst, tr, err);
    slim_example_free(ex);
    tr->t[SLIM_STAGE_READ] += t1 - t0;
    if (tr->n_ev < 8) {
        memmove(tr->ev + 1, tr->ev, sizeof tr->ev[0] * (size_t)tr->n_ev);
        tr->ev[0].stage = SLIM_STAGE_READ;
        tr->ev[0].t0 = t0;
        tr->ev[0].t1 = t1;
        tr->n_ev++;
    }
    *label = (int32_t)lab;
    if (st && err)
        snprintf(err->file, sizeof err->file, "%s", s->path);
    return st;
}

static void set_failed(slim_pipeline *p, const slim_error *e)
{
    if (!p->failed) {
        p->failed = true;
        p->error = *e;
    }
    p->stop = true;
    pthread_cond_broadcast(&p->cv_ready);
    pthread_cond_broadcast(&p->cv_space);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    slim_pipeline *p = w->p;
    const int N = p->N;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop)
            break;
        if (p->end_known) {
            pthread_cond_wait(&p->cv_space, &p->mu);
            continue;
        }
        int64_t g = p->next_claim, b = g / N;
        if (b >= p->consumed + p->nslots) {
            double t0 = slim__now();
            pthread_cond_wait(&p->cv_space, &p->mu);
            double t1 = slim__now();
            p->st.stage_seconds[SLIM_STAGE_WAIT] += t1 - t0;
            p->st.stage_count[SLIM_STAGE_WAIT]++;
            if (p->o.trace) {
                slim_pipeline_event ev = {w->id, SLIM_STAGE_WAIT, t0, t1, -1, -1};
                pthread_mutex_unlock(&p->mu);
                p->o.trace(&ev, p->o.trace_user);
                pthread_mutex_lock(&p->mu);
            }
            continue;
        }
        item it;
        bool end;
        slim_error e = {0};
        slim_status st;
        for (;;) { /* with replicas, the next example of one of this process's blocks */
            st = slim__seq_next(p, &it, &end, &e);
            if (st || end)
                break;
            int64_t sg = p->stream_next++;
            if (p->o.replicas <= 1 || p->o.replica_by_file ||
                ((sg - p->stream_base) / N) % p->o.replicas == p->o.replica)
                break;
            slim__seq_item_free(&it);
        }
        if (st) {
            set_failed(p, &e);
            break;
        }
        if (end) {
            p->end_known = true;
            p->total = g;
            pthread_cond_broadcast(&p->cv_ready);
            continue;
        }
        slot *s = &p->slots[b % p->nslots];
        int pos = (int)(g % N);
        if (pos == 0) {
            s->batch = b;
            s->filled = 0;
            s->epoch = it.epoch;
            s->index = it.index;
            if (p->o.replicas > 1 && !p->o.replica_by_file) /* position_get may wait for it */
                pthread_cond_broadcast(&p->cv_ready);
        }
        p->next_claim++;
        pthread_mutex_unlock(&p->mu);

        prep_trace tr;
        memset(&tr, 0, sizeof tr);
        st = process(w, &it, s->images + (size_t)pos * p->img_elems, &s->labels[pos], &tr, &e);
        slim__seq_item_free(&it);
        s->valid[pos] = st == SLIM_OK;
        if (p->o.trace)
            for (int k = 0; k < tr.n_ev; k++) {
                slim_pipeline_event ev = {w->id,       tr.ev[k].stage, tr.ev[k].t0,
                                          tr.ev[k].t1, it.epoch,       it.index};
                p->o.trace(&ev, p->o.trace_user);
            }

        pthread_mutex_lock(&p->mu);
        if (st) {
            if (p->o.on_error == SLIM_ON_ERROR_SKIP) {
                slim__seq_skip_note(p, &e);
            } else {
                set_failed(p, &e);
                break;
            }
        } else {
            p->st.examples++;
            for (int k = 0; k < SLIM_STAGE_COUNT; k++)
                if (tr.t[k] > 0) {
                    p->st.stage_seconds[k] += tr.t[k];
                    p->st.stage_count[k]++;
                }
            if (tr.roi)
                p->st.roi_decodes++;
            if (tr.scale_denom > 1)
                p->st.scaled_decodes++;
            if (tr.cut)
                p->st.indexed_decodes++;
            if (tr.decoded_w && !tr.roi)
                p->st.full_decodes++;
            if (tr.n_boxes > 0)
                p->st.boxed_examples++;
            p->st.bytes_read += (int64_t)w->last_len;
        }
        s->filled++;
        if (s->filled == N || p->end_known)
            pthread_cond_broadcast(&p->cv_ready);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------ */

static slim_status start_workers(slim_pipeline *p, slim_error *err)
{
    p->stop = false;
    for (int i = 0; i < p->nw; i++) {
        worker *w = &p->workers[i];
        w->p = p;
        w->id = i;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
            pthread_mutex_lock(&p->mu);
            p->stop = true;
            pthread_cond_broadcast(&p->cv_space);
            pthread_mutex_unlock(&p->mu);
            for (int k = 0; k < i; k++)
                pthread_join(p->workers[k].th, NULL);
            return slim__error(err, SLIM_EINTERNAL, "cannot start worker threads");
        }
    }
    p->running = true;
    return SLIM_OK;
}

static void stop_workers(slim_pipeline *p)
{
    if (!p->running)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv_space);
    pthread_cond_broadcast(&p->cv_ready);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nw; i++)
        pthread_join(p->workers[i].th, NULL);
    p->running = false;
}

static char *sdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void slim_pipeline_free(slim_pipeline *p)
{
    if (!p)
        return;
    stop_workers(p);
    slim__seq_clear(&p->gen);
    free(p->gen.order);
    free(p->gen.rs);
    free(p->gen.buf);
    for (int i = 0; p->slots && i < p->nslots; i++) {
        free(p->slots[i].images);
        free(p->slots[i].labels);
        free(p->slots[i].valid);
    }
    free(p->slots);
    for (int i = 0; p->workers && i < p->nw; i++) {
        slim__prep_scratch_free(p->workers[i].scratch);
        free(p->workers[i].buf);
    }
    free(p->workers);
    for (int i = 0; i < p->n_src; i++)
        free(p->src[i].path);
    free(p->src);
    for (int i = 0; i < p->n_skip_msgs; i++)
        free(p->skip_msgs[i]);
    slim__recipe_free(p->recipe);
    slim_dataset_free(p->ds);
    free(p->s_pattern);
    free(p->s_name);
    free(p->s_dir);
    free(p->s_split);
    free(p->s_recipe);
    free(p->s_rdir);
    free(p->s_ikey);
    free(p->s_lkey);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_space);
    pthread_cond_destroy(&p->cv_ready);
    free(p);
}

slim_status slim_pipeline_new(const slim_pipeline_opts *opts, slim_pipeline **out, slim_error *err)
{
    *out = NULL;
    slim_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_space, NULL);
    pthread_cond_init(&p->cv_ready, NULL);
    p->t_start = slim__now();
    p->o = *opts;
    slim_pipeline_opts *o = &p->o;
    /* Own the strings. */
    o->file_pattern = p->s_pattern = sdup(opts->file_pattern);
    o->dataset_name = p->s_name = sdup(opts->dataset_name);
    o->dataset_dir = p->s_dir = sdup(opts->dataset_dir);
    o->split = p->s_split = sdup(opts->split);
    o->recipe = p->s_recipe = sdup(opts->recipe);
    o->recipe_dir = p->s_rdir = sdup(opts->recipe_dir);
    o->image_key = p->s_ikey = sdup(opts->image_key);
    o->label_key = p->s_lkey = sdup(opts->label_key);
    slim_status st = SLIM_OK;
    if (o->batch_size <= 0)
        o->batch_size = 32;
    if (o->num_threads <= 0)
        o->num_threads = 1;
    if (o->num_readers <= 0)
        o->num_readers = o->is_training ? 4 : 1;
    if (o->replicas < 0 || o->replica < 0 || o->replica >= (o->replicas > 1 ? o->replicas : 1)) {
        st = slim__error(err, SLIM_EINVAL, "pipeline replica %d of %d is out of range", o->replica,
                         o->replicas);
        goto fail;
    }
    if (o->shuffle_buffer == 0)
        o->shuffle_buffer = o->is_training ? 20 * o->batch_size * blocks_apart(p) : 1;
    if (o->shuffle_buffer < 0 || !o->is_training)
        o->shuffle_buffer = 1;
    if (o->prefetch_batches <= 0)
        o->prefetch_batches = 2 + o->num_threads / 8;
    if (!o->is_training && o->num_epochs == 0)
        o->num_epochs = 1;
    if (o->num_epochs < 0) {
        st = slim__error(err, SLIM_EINVAL, "num_epochs must be >= 0 (0 = forever)");
        goto fail;
    }
    /* The data. */
    if (o->file_pattern && *o->file_pattern) {
        st = slim__dataset_from_files(o->file_pattern, 0, &p->ds, err);
    } else if (o->dataset_dir) {
        const char *split = o->split;
        if (!split && o->is_training)
            split = "train";
        if (!split) { /* TF-Slim evaluates on validation (ImageNet, flowers) or test (MNIST, CIFAR)
                       */
            slim_error e2 = {0};
            st = slim_dataset_open(o->dataset_name, o->dataset_dir, "validation", &p->ds, &e2);
            if (st)
                st = slim_dataset_open(o->dataset_name, o->dataset_dir, "test", &p->ds, err);
        } else {
            st = slim_dataset_open(o->dataset_name, o->dataset_dir, split, &p->ds, err);
        }
    } else {
        st = slim__error(err, SLIM_EINVAL, "the pipeline needs file_pattern or dataset_dir");
    }
    if (st)
        goto fail;
    p->info = slim_dataset_get_info(p->ds);
    /* The recipe. */
    const char *rname = o->recipe ? o->recipe : p->info->default_recipe;
    st = slim__recipe_load(rname ? rname : "inception", o->recipe_dir, &p->recipe, err);
    if (!st && o->grayscale)
        st = slim__recipe_add_grayscale(p->recipe, o->is_training, err);
    if (st)
        goto fail;
    st = slim__prep_init(&p->prep, p->recipe, o->is_training, o->image_size, o->image_size,
                         o->channels, !o->no_roi_decode, !o->no_dct_scaling, err);
    if (st)
        goto fail;
    p->image_key = o->image_key ? o->image_key : p->recipe->image_key;
    p->label_key = o->label_key ? o->label_key : p->recipe->label_key;
    p->format_key = p->recipe->format_key;
    p->N = o->batch_size;
    p->H = p->prep.out_h;
    p->W = p->prep.out_w;
    p->C = p->prep.channels;
    p->img_elems = (size_t)p->H * p->W * p->C;
    st = slim__seq_build_sources(p, err);
    if (st)
        goto fail;
    if (o->replicas > 1 && o->replica_by_file && p->n_src < o->replicas) {
        st = slim__error(err, SLIM_EINVAL,
                         "sharing the input by file needs at least a file per process: %d "
                         "file%s for %d processes (share by record instead)",
                         p->n_src, p->n_src == 1 ? "" : "s", o->replicas);
        goto fail;
    }
    /* State. */
    seqgen *g = &p->gen;
    g->R = o->num_readers;
    g->cap = o->shuffle_buffer;
    g->order = calloc((size_t)p->n_src, sizeof *g->order);
    g->rs = calloc((size_t)g->R, sizeof *g->rs);
    g->buf = calloc((size_t)g->cap, sizeof *g->buf);
    p->nslots = o->prefetch_batches + 1; /* + the one the caller holds */
    p->slots = calloc((size_t)p->nslots, sizeof *p->slots);
    p->nw = o->num_threads;
    p->workers = calloc((size_t)p->nw, sizeof *p->workers);
    if (!g->order || !g->rs || !g->buf || !p->slots || !p->workers) {
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < p->nslots; i++) {
        slot *s = &p->slots[i];
        s->batch = -1;
        /* Bindable as program inputs (slim_program_bind_input): aligned, with slack. */
        size_t ib = (sizeof(float) * p->img_elems * p->N + 63) / 64 * 64;
        size_t lb = (sizeof(int32_t) * p->N + 63) / 64 * 64;
        s->images = aligned_alloc(SLIM_BIND_ALIGN, ib + SLIM_BIND_SLACK);
        s->labels = aligned_alloc(SLIM_BIND_ALIGN, lb + SLIM_BIND_SLACK);
        if (s->images)
            memset((char *)s->images + ib - 64, 0, 64 + SLIM_BIND_SLACK);
        if (s->labels)
            memset(s->labels, 0, lb + SLIM_BIND_SLACK);
        s->valid = calloc((size_t)p->N, sizeof *s->valid);
        if (!s->images || !s->labels || !s->valid) {
            st = slim__error(err, SLIM_ENOMEM, "cannot allocate %d batches of %dx%dx%dx%d floats",
                             p->nslots, p->N, p->H, p->W, p->C);
            goto fail;
        }
    }
    for (int i = 0; i < p->nw; i++)
        if (!(p->workers[i].scratch = slim__prep_scratch_new())) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            goto fail;
        }
    p->st.num_threads = p->nw;
    p->st.queue_capacity = p->nslots - 1;
    st = start_workers(p, err);
    if (st)
        goto fail;
    *out = p;
    return SLIM_OK;
fail:
    slim_pipeline_free(p);
    return st;
}

void slim_pipeline_shape(const slim_pipeline *p, int *n, int *h, int *w, int *c)
{
    *n = p->N;
    *h = p->H;
    *w = p->W;
    *c = p->C;
}

const slim_dataset_info *slim_pipeline_dataset(const slim_pipeline *p)
{
    return p->info;
}

/* Release the batch the caller held (mu held). */
static void release_view(slim_pipeline *p)
{
    if (p->view_out) {
        p->view_out = false;
        p->consumed++;
        p->st.batches++;
        pthread_cond_broadcast(&p->cv_space);
    }
}

static slim_status next_batch(slim_pipeline *p, slot **sp, slim_batch_info *info, slim_error *err)
{
    memset(info, 0, sizeof *info);
    double t0 = slim__now();
    pthread_mutex_lock(&p->mu);
    release_view(p);
    const int N = p->N;
    for (;;) {
        if (p->failed) {
            if (err)
                *err = p->error;
            pthread_mutex_unlock(&p->mu);
            return p->error.code ? p->error.code : SLIM_EINTERNAL;
        }
        int64_t b = p->consumed;
        if (p->end_known && b * N >= p->total) {
            info->end_of_data = true;
            break;
        }
        slot *s = &p->slots[b % p->nslots];
        int expected = N;
        if (p->end_known && (b + 1) * N > p->total)
            expected = (int)(p->total - b * N);
        if (s->batch == b && s->filled >= expected && (expected == N || p->end_known)) {
            if (expected < N && p->o.drop_remainder) {
                info->end_of_data = true;
                break;
            }
            /* Replace skipped examples by the next valid one in the batch. */
            int nvalid = 0;
            for (int i = 0; i < expected; i++)
                nvalid += s->valid[i];
            if (nvalid == 0) { /* the whole batch was corrupt: take the next */
                p->consumed++;
                pthread_cond_broadcast(&p->cv_space);
                continue;
            }
            for (int i = 0; i < expected; i++) {
                if (s->valid[i])
                    continue;
                int j = (i + 1) % expected;
                while (!s->valid[j])
                    j = (j + 1) % expected;
                memcpy(s->images + (size_t)i * p->img_elems, s->images + (size_t)j * p->img_elems,
                       sizeof(float) * p->img_elems);
                s->labels[i] = s->labels[j];
                info->n_replaced++;
            }
            if (expected < N) {
                memset(s->images + (size_t)expected * p->img_elems, 0,
                       sizeof(float) * p->img_elems * (size_t)(N - expected));
                memset(s->labels + expected, 0, sizeof(int32_t) * (size_t)(N - expected));
            }
            info->n_valid = expected;
            info->epoch = s->epoch;
            info->index = s->index;
            info->consumed = p->stream_base + b * N * blocks_apart(p);
            *sp = s;
            p->view_out = true;
            break;
        }
        pthread_cond_wait(&p->cv_ready, &p->mu);
    }
    double t1 = slim__now();
    info->wait_seconds = t1 - t0;
    p->st.wait_seconds += t1 - t0;
    pthread_mutex_unlock(&p->mu);
    return SLIM_OK;
}

slim_status slim_pipeline_next_view(slim_pipeline *p, const float **images, const int32_t **labels,
                                    slim_batch_info *info, slim_error *err)
{
    slot *s = NULL;
    slim_status st = next_batch(p, &s, info, err);
    if (st || info->end_of_data) {
        *images = NULL;
        *labels = NULL;
        return st;
    }
    *images = s->images;
    *labels = s->labels;
    return SLIM_OK;
}

slim_status slim_pipeline_next(slim_pipeline *p, float *images, int32_t *labels,
                               slim_batch_info *info, slim_error *err)
{
    slot *s = NULL;
    slim_status st = next_batch(p, &s, info, err);
    if (st || info->end_of_data)
        return st;
    double t0 = slim__now();
    memcpy(images, s->images, sizeof(float) * p->img_elems * (size_t)p->N);
    memcpy(labels, s->labels, sizeof(int32_t) * (size_t)p->N);
    double t1 = slim__now();
    pthread_mutex_lock(&p->mu);
    release_view(p);
    p->st.stage_seconds[SLIM_STAGE_BATCH] += t1 - t0;
    p->st.stage_count[SLIM_STAGE_BATCH]++;
    pthread_mutex_unlock(&p->mu);
    if (p->o.trace) {
        slim_pipeline_event ev = {-1, SLIM_STAGE_BATCH, t0, t1, info->epoch, -1};
        p->o.trace(&ev, p->o.trace_user);
    }
    return SLIM_OK;
}

void slim_pipeline_get_stats(const slim_pipeline *cp, slim_pipeline_stats *st)
{
    slim_pipeline *p = (slim_pipeline *)cp;
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    int depth = 0;
    for (int64_t b = p->consumed + (p->view_out ? 1 : 0); b < p->consumed + p->nslots; b++) {
        slot *s = &p->slots[b % p->nslots];
        if (s->batch == b && s->filled == p->N)
            depth++;
    }
    st->queue_depth = depth;
    st->elapsed_seconds = slim__now() - p->t_start;
    pthread_mutex_unlock(&p->mu);
}

const char *slim_pipeline_skip_message(const slim_pipeline *p, int i)
{
    return i >= 0 && i < p->n_skip_msgs ? p->skip_msgs[i] : NULL;
}

void slim_pipeline_position_get(const slim_pipeline *cp, slim_pipeline_position *pos)
{
    slim_pipeline *p = (slim_pipeline *)cp;
    pthread_mutex_lock(&p->mu);
    int64_t b = p->consumed + (p->view_out ? 1 : 0);
    slot *s = &p->slots[b % p->nslots];
    int reps = blocks_apart(p);
    pos->consumed = p->stream_base + b * p->N * reps;
    /* with replicas the sequence runs ahead through the others' blocks: the
     * first example of batch b says where it is (claimed soon: the batches
     * before it are handed out) */
    while (reps > 1 && s->batch != b && !p->end_known && !p->failed && !p->stop && p->running)
        pthread_cond_wait(&p->cv_ready, &p->mu);
    if (s->batch == b) {
        pos->epoch = s->epoch;
        pos->index = s->index;
    } else {
        pos->epoch = p->gen.epoch;
        pos->index = p->gen.started ? p->gen.index : 0;
    }
    pthread_mutex_unlock(&p->mu);
}

slim_status slim_pipeline_restore(slim_pipeline *p, const slim_pipeline_position *pos,
                                  slim_error *err)
{
    if (pos->epoch < 0 || pos->index < 0 || pos->consumed < 0)
        return slim__error(err, SLIM_EINVAL,
                           "pipeline position (epoch %lld, index %lld, consumed %lld) is invalid",
                           (long long)pos->epoch, (long long)pos->index, (long long)pos->consumed);
    stop_workers(p);
    pthread_mutex_lock(&p->mu);
    slim__seq_clear(&p->gen);
    p->gen.epoch = pos->epoch;
    slim_status st = SLIM_OK;
    slim_error e = {0};
    /* Replay the sequence of the epoch up to the position (headers only). */
    while (!st) {
        if (p->gen.started && (p->gen.epoch > pos->epoch || p->gen.index >= pos->index))
            break;
        if (!p->gen.started && pos->index == 0)
            break;
        item it;
        bool end;
        st = slim__seq_next(p, &it, &end, &e);
        if (st || end)
            break;
        slim__seq_item_free(&it);
    }
    for (int i = 0; i < p->nslots; i++) {
        p->slots[i].batch = -1;
        p->slots[i].filled = 0;
    }
    /* batches count from here (the stream's number goes on from the position) */
    p->stream_base = p->stream_next = pos->consumed;
    p->next_claim = 0;
    p->consumed = 0;
    p->view_out = false;
    p->end_known = false;
    p->failed = false;
    memset(&p->error, 0, sizeof p->error);
    pthread_mutex_unlock(&p->mu);
    if (st) {
        if (err)
            *err = e;
        return st;
    }
    return start_workers(p, err);
}

/* ---- one image outside a pipeline ------------------------------------------------- */

struct slim_preprocessor {
    slim__recipe *recipe;
    slim__prep prep;
    slim__prep_scratch *scratch;
    uint64_t seed;
};

slim_status slim_preprocessor_new(const slim_pipeline_opts *o, slim_preprocessor **out,
                                  slim_error *err)
{
    *out = NULL;
    slim_preprocessor *pp = calloc(1, sizeof *pp);
    if (!pp)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    pp->seed = o->seed;
    slim_status st =
        slim__recipe_load(o->recipe ? o->recipe : "inception", o->recipe_dir, &pp->recipe, err);
    if (!st && o->grayscale)
        st = slim__recipe_add_grayscale(pp->recipe, o->is_training, err);
    if (!st)
        st = slim__prep_init(&pp->prep, pp->recipe, o->is_training, o->image_size, o->image_size,
                             o->channels, !o->no_roi_decode, !o->no_dct_scaling, err);
    if (!st && !(pp->scratch = slim__prep_scratch_new()))
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    if (st) {
        slim_preprocessor_free(pp);
        return st;
    }
    *out = pp;
    return SLIM_OK;
}

void slim_preprocessor_shape(const slim_preprocessor *pp, int *h, int *w, int *c)
{
    *h = pp->prep.out_h;
    *w = pp->prep.out_w;
    *c = pp->prep.channels;
}

slim_status slim_preprocessor_run(slim_preprocessor *pp, const void *data, size_t len,
                                  const char *name, int64_t epoch, int64_t index, float *out,
                                  slim_error *err)
{
    prep_input in = {.data = data, .len = len, .name = name};
    return slim__prep_run(&pp->prep, pp->scratch, &in, pp->seed, epoch, index, out, NULL, err);
}

void slim_preprocessor_free(slim_preprocessor *pp)
{
    if (!pp)
        return;
    slim__prep_scratch_free(pp->scratch);
    slim__recipe_free(pp->recipe);
    free(pp);
}
