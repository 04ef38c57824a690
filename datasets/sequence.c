/* datasets/sequence.c - the pipeline's sources and its example sequence.
 *
 * Sources: dataset files -> TFRecord shards and image files (class folders
 * give labels). The sequence of an epoch is a pure function of (seed, epoch):
 * shard order shuffled by (seed, epoch), num_readers shards interleaved one
 * record at a time, then a shuffle buffer drawing by (seed, epoch, index).
 * See pipeline.c for the workers around it. */
#include "datasets/pipeline.h"
#include "datasets/listdir.h"
#include "datasets/tfrecord.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sources ---------------------------------------------------------------- */

static bool is_image_name(const char *p)
{
    const char *dot = strrchr(p, '.');
    return dot &&
           (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".png"));
}

static slim_status add_source(slim_pipeline *p, const char *path, bool image, int label)
{
    if ((p->n_src & (p->n_src - 1)) == 0) {
        source *ns = realloc(p->src, (size_t)(p->n_src ? 2 * p->n_src : 16) * sizeof *ns);
        if (!ns)
            return SLIM_ENOMEM;
        p->src = ns;
    }
    p->src[p->n_src].path = strdup(path);
    p->src[p->n_src].image = image;
    p->src[p->n_src].label = label;
    if (!p->src[p->n_src].path)
        return SLIM_ENOMEM;
    p->n_src++;
    return SLIM_OK;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* dataset files -> sources: class folders expand to their images (label =
 * sorted folder index); loose images get the index of their parent folder's
 * name among the sorted distinct parents; everything else is a TFRecord shard. */
slim_status slim__seq_build_sources(slim_pipeline *p, slim_error *err)
{
    const slim_dataset_info *in = p->info;
    char **parents = NULL;
    int n_parents = 0;
    for (int i = 0; i < in->n_files; i++) {
        const char *f = in->files[i];
        if (is_dir(f)) {
            int nc;
            char **classes = slim__list_dir(f, &nc);
            int label = 0;
            for (int c = 0; c < nc; c++) {
                char cdir[4096];
                snprintf(cdir, sizeof cdir, "%s/%s", f, classes[c]);
                if (!is_dir(cdir))
                    continue;
                int nf;
                char **files = slim__list_dir(cdir, &nf);
                for (int k = 0; k < nf; k++) {
                    char fp[4200];
                    snprintf(fp, sizeof fp, "%s/%s", cdir, files[k]);
                    if (is_image_name(fp) && add_source(p, fp, true, label))
                        return slim__error(err, SLIM_ENOMEM, "out of memory");
                    free(files[k]);
                }
                free(files);
                label++;
            }
            if (label == 0) /* no class folders: the images in the folder itself, unlabeled */
                for (int c = 0; c < nc; c++) {
                    char fp[4200];
                    snprintf(fp, sizeof fp, "%s/%s", f, classes[c]);
                    if (is_image_name(fp) && !is_dir(fp) && add_source(p, fp, true, -1))
                        return slim__error(err, SLIM_ENOMEM, "out of memory");
                }
            for (int c = 0; c < nc; c++)
                free(classes[c]);
            free(classes);
        } else if (is_image_name(f)) {
            if (add_source(p, f, true, -2))
                return slim__error(err, SLIM_ENOMEM, "out of memory");
        } else if (add_source(p, f, false, -1)) {
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        }
    }
    /* Loose images: labels from their parent folder names. */
    for (int i = 0; i < p->n_src; i++) {
        if (p->src[i].label != -2)
            continue;
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", p->src[i].path);
        char *s = strrchr(parent, '/');
        *(s ? s : parent) = 0;
        s = strrchr(parent, '/');
        const char *name = s ? s + 1 : parent;
        int k;
        for (k = 0; k < n_parents && strcmp(parents[k], name); k++)
            ;
        if (k == n_parents) {
            parents = realloc(parents, (size_t)(n_parents + 1) * sizeof *parents);
            parents[n_parents++] = strdup(name);
        }
    }
    if (n_parents > 1)
        qsort(parents, (size_t)n_parents, sizeof *parents, slim__cmp_str);
    for (int i = 0; i < p->n_src; i++) {
        if (p->src[i].label != -2)
            continue;
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", p->src[i].path);
        char *s = strrchr(parent, '/');
        *(s ? s : parent) = 0;
        s = strrchr(parent, '/');
        const char *name = s ? s + 1 : parent;
        int k = 0;
        while (k < n_parents && strcmp(parents[k], name))
            k++;
        p->src[i].label = n_parents > 1 ? k : -1;
    }
    for (int k = 0; k < n_parents; k++)
        free(parents[k]);
    free(parents);
    if (p->n_src == 0)
        return slim__error(err, SLIM_ENOTFOUND,
                           "no input: the dataset's files hold no records or images");
    return SLIM_OK;
}

/* ---- the example sequence (called with mu held) ------------------------------- */

static void shard_unref(shard *sh)
{
    if (sh && __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        close(sh->fd);
        free(sh);
    }
}

void slim__seq_item_free(item *it)
{
    free(it->bytes);
    it->bytes = NULL;
    shard_unref(it->sh);
    it->sh = NULL;
}

static void rslot_close(rslot *s)
{
    slim_tfrecord_close(s->r);
    s->r = NULL;
    shard_unref(s->sh);
    s->sh = NULL;
    s->active = false;
}

void slim__seq_clear(seqgen *g)
{
    for (int i = 0; i < g->n; i++)
        slim__seq_item_free(&g->buf[i]);
    g->n = 0;
    for (int i = 0; i < g->R; i++)
        rslot_close(&g->rs[i]);
    g->started = false;
}

void slim__seq_skip_note(slim_pipeline *p, const slim_error *e)
{
    p->st.skipped++;
    if (p->n_skip_msgs < MAX_SKIP_MSGS)
        p->skip_msgs[p->n_skip_msgs++] = strdup(e->msg);
    slim__log(SLIM_LOG_WARN, "skipped: %s", e->msg);
}

static void gen_start_epoch(slim_pipeline *p)
{
    seqgen *g = &p->gen;
    g->started = true;
    g->index = 0;
    g->next_shard = 0;
    g->rr = 0;
    g->input_done = false;
    for (int i = 0; i < p->n_src; i++)
        g->order[i] = i;
    if (p->o.is_training) { /* Fisher-Yates with draws from (seed, epoch) */
        for (int i = p->n_src - 1; i > 0; i--) {
            int j = (int)(slim_rand_u64(p->o.seed, 0x5A4D00ull + (uint64_t)g->epoch, (uint64_t)i) %
                          (uint64_t)(i + 1));
            int t = g->order[i];
            g->order[i] = g->order[j];
            g->order[j] = t;
        }
    }
    g->n_order = p->n_src;
    if (p->o.replicas > 1 && p->o.replica_by_file) { /* this replica's files of the epoch */
        g->n_order = 0;
        for (int i = p->o.replica; i < p->n_src; i += p->o.replicas)
            g->order[g->n_order++] = g->order[i];
    }
}

/* Open the next shard into slot s; false when none is left. */
static slim_status rslot_open(slim_pipeline *p, rslot *s, bool *opened, slim_error *err)
{
    seqgen *g = &p->gen;
    *opened = false;
    while (g->next_shard < g->n_order) {
        int src = g->order[g->next_shard++];
        s->src = src;
        s->image_done = false;
        if (p->src[src].image) {
            s->active = true;
            *opened = true;
            return SLIM_OK;
        }
        slim_error e = {0};
        slim_status st =
            slim_tfrecord_open(p->src[src].path, SLIM_COMPRESSION_AUTO, true, &s->r, &e);
        if (!st && slim_tfrecord_compression(s->r) == SLIM_COMPRESSION_NONE) {
            s->sh = calloc(1, sizeof *s->sh);
            if (!s->sh || (s->sh->fd = open(p->src[src].path, O_RDONLY | O_CLOEXEC)) < 0) {
                free(s->sh);
                s->sh = NULL;
                st = slim__data_error(&e, SLIM_EIO, p->src[src].path, "%s: cannot open: %s",
                                      p->src[src].path, strerror(errno));
                slim_tfrecord_close(s->r);
                s->r = NULL;
            } else {
                s->sh->refs = 1;
            }
        }
        if (st) {
            if (p->o.on_error == SLIM_ON_ERROR_SKIP) {
                slim__seq_skip_note(p, &e);
                continue;
            }
            if (err)
                *err = e;
            return st;
        }
        s->active = true;
        *opened = true;
        return SLIM_OK;
    }
    return SLIM_OK;
}

/* One record from slot s into *it; *got false at the shard's end (slot closed). */
static slim_status rslot_read(slim_pipeline *p, rslot *s, item *it, bool *got, slim_error *err)
{
    *got = false;
    memset(it, 0, sizeof *it);
    it->src = s->src;
    if (p->src[s->src].image) {
        if (!s->image_done) {
            s->image_done = true;
            *got = true;
            return SLIM_OK;
        }
        s->active = false;
        return SLIM_OK;
    }
    slim_error e = {0};
    slim_status st;
    it->record = slim__tfrecord_record_index(s->r);
    if (s->sh) {
        bool eof;
        st = slim__tfrecord_next_location(s->r, &it->offset, &it->len, &eof, &e);
        if (!st && !eof) {
            it->sh = s->sh;
            __atomic_add_fetch(&s->sh->refs, 1, __ATOMIC_ACQ_REL);
            *got = true;
            p->st.bytes_read += 16;
            return SLIM_OK;
        }
    } else {
        const uint8_t *d;
        size_t len;
        st = slim_tfrecord_next(s->r, &d, &len, &it->offset, &e);
        if (!st && d) {
            it->bytes = malloc(len ? len : 1);
            if (!it->bytes)
                return slim__error(err, SLIM_ENOMEM, "out of memory");
            memcpy(it->bytes, d, len);
            it->len = len;
            *got = true;
            p->st.bytes_read += (int64_t)len + 16;
            return SLIM_OK;
        }
    }
    rslot_close(s);
    if (st) { /* framing lost: the rest of this shard is skipped */
        if (p->o.on_error == SLIM_ON_ERROR_SKIP) {
            slim__seq_skip_note(p, &e);
            return SLIM_OK;
        }
        if (err)
            *err = e;
        return st;
    }
    return SLIM_OK;
}

/* Next record of the interleaved shards; *got false when the epoch's input is done. */
static slim_status gen_pull(slim_pipeline *p, item *it, bool *got, slim_error *err)
{
    seqgen *g = &p->gen;
    *got = false;
    for (;;) {
        bool any = false;
        for (int t = 0; t < g->R; t++) {
            rslot *s = &g->rs[g->rr];
            g->rr = (g->rr + 1) % g->R;
            for (;;) {
                if (!s->active) {
                    bool opened;
                    slim_status st = rslot_open(p, s, &opened, err);
                    if (st)
                        return st;
                    if (!opened)
                        break;
                }
                any = true;
                slim_status st = rslot_read(p, s, it, got, err);
                if (st)
                    return st;
                if (*got)
                    return SLIM_OK;
                /* shard ended: the slot takes the next one */
            }
        }
        if (!any) {
            g->input_done = true;
            return SLIM_OK;
        }
    }
}

/* The next example of the run: *end when every epoch is done. */
slim_status slim__seq_next(slim_pipeline *p, item *out, bool *end, slim_error *err)
{
    seqgen *g = &p->gen;
    *end = false;
    for (;;) {
        if (!g->started) {
            if (p->o.num_epochs > 0 && g->epoch >= p->o.num_epochs) {
                *end = true;
                return SLIM_OK;
            }
            gen_start_epoch(p);
        }
        while (g->n < g->cap && !g->input_done) {
            bool got;
            slim_status st = gen_pull(p, &g->buf[g->n], &got, err);
            if (st)
                return st;
            if (got)
                g->n++;
        }
        if (g->n == 0) { /* epoch over */
            if (g->index == 0)
                return slim__error(err, SLIM_ENOTFOUND, "epoch %lld yielded no examples%s",
                                   (long long)g->epoch,
                                   p->st.skipped ? " (every record was skipped)" : "");
            if (g->epoch == 0 || p->st.epoch_size == 0)
                p->st.epoch_size = g->index;
            g->epoch++;
            g->started = false;
            continue;
        }
        int j = 0;
        if (g->cap > 1 && p->o.is_training)
            j = (int)(slim_rand_u64(p->o.seed, 0xB0FFull + (uint64_t)g->epoch, (uint64_t)g->index) %
                      (uint64_t)g->n);
        *out = g->buf[j];
        if (g->cap > 1 && p->o.is_training) {
            g->buf[j] = g->buf[--g->n];
        } else { /* FIFO */
            memmove(g->buf, g->buf + 1, (size_t)(g->n - 1) * sizeof *g->buf);
            g->n--;
        }
        out->epoch = g->epoch;
        out->index = g->index++;
        return SLIM_OK;
    }
}
