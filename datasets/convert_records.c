/* datasets/convert_records.c - TFRecord shards of tf.train.Example -> the
 * same shards with restart-indexed JPEGs (`slimrun convert --input_records`).
 *
 * Shards that TF-Slim's or Inception's converters wrote hold the source JPEG
 * bytes, so random crops of them pay for Huffman-decoding every row above the
 * crop. This rewrites each shard under the same name in the output folder:
 * every record's image (`image/encoded`, or the key given) that is a JPEG is
 * losslessly transcoded with a restart marker per MCU (jpeg_index.c), every
 * other feature and record is kept as it is, in order. One shard per worker
 * thread, each written to a temporary name, fsynced and renamed; shards
 * already in the output are kept (resume). labels.txt and dataset.yaml are
 * copied from the first shard's folder when there. */
#include "datasets/convert.h"
#include "datasets/jpeg_index.h"
#include "datasets/tfrecord.h"
#include "core/error.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct rjob {
    const convert_opts *o;
    const char *image_key;
    const char *const *files;
    int n;
    pthread_mutex_t mu;
    int next;          /* the next shard to take */
    int done, resumed; /* shards */
    int64_t records, indexed, kept, skipped;
    int64_t live; /* records read so far, for the progress line */
    bool failed;
    slim_error err;
    char first_skip[1024];
} rjob;

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* One record: the Example with its JPEG transcoded (*out malloc'ed), or NULL
 * in *out when the record is kept as it is. */
static slim_status reindex(const rjob *j, const uint8_t *d, size_t len, const char *where,
                           uint8_t **out, size_t *olen, bool *indexed, slim_error *err)
{
    *out = NULL;
    *indexed = false;
    slim_example *ex;
    slim_status st = slim_example_parse(d, len, &ex, err);
    if (st)
        return slim__data_error(err, SLIM_ECORRUPT, where, "%s: not a tf.train.Example", where);
    const uint8_t *img;
    size_t ilen;
    uint8_t *jpg = NULL;
    size_t jlen = 0;
    if (!slim_example_bytes(ex, j->image_key, 0, &img, &ilen) &&
        slim_image_sniff(img, ilen) == SLIM_IMAGE_JPEG)
        st = slim__jpeg_add_restarts(img, ilen, where, &jpg, &jlen, err);
    if (!st && jpg) {
        st = slim_example_set_bytes(ex, j->image_key, jpg, jlen);
        if (!st)
            st = slim_example_serialize(ex, out, olen, err);
        else
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
        *indexed = !st;
    }
    free(jpg);
    slim_example_free(ex);
    return st;
}

static slim_status do_shard(rjob *j, const char *in, slim_error *err)
{
    const convert_opts *o = j->o;
    char final[PATH_MAX + 256], tmp[PATH_MAX + 300];
    snprintf(final, sizeof final, "%s/%s", o->output_dir, base_name(in));
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", o->output_dir, base_name(in));
    char rin[PATH_MAX], rout[PATH_MAX];
    if (realpath(in, rin) && realpath(o->output_dir, rout)) {
        char *slash = strrchr(rin, '/');
        if (slash && (size_t)(slash - rin) == strlen(rout) && !strncmp(rin, rout, strlen(rout)))
            return slim__error(err, SLIM_EINVAL,
                               "%s: the output folder is the input's; give another --dataset_dir",
                               in);
    }
    if (access(final, R_OK) == 0) {
        pthread_mutex_lock(&j->mu);
        j->resumed++;
        pthread_mutex_unlock(&j->mu);
        return SLIM_OK;
    }
    slim_tfrecord_reader *r;
    slim_status st = slim_tfrecord_open(in, SLIM_COMPRESSION_AUTO, true, &r, err);
    if (st)
        return st;
    slim_tfrecord_writer *w;
    if ((st = slim_tfrecord_writer_new(tmp, o->compression, &w, err))) {
        slim_tfrecord_close(r);
        return st;
    }
    int64_t recs = 0, idx = 0, kept = 0, skipped = 0;
    char first_skip[1024] = "";
    for (;;) {
        pthread_mutex_lock(&j->mu);
        bool stop = j->failed;
        pthread_mutex_unlock(&j->mu);
        if (stop) {
            st = SLIM_ESTATE;
            break;
        }
        const uint8_t *d;
        size_t len;
        int64_t off = 0;
        slim_error e = {0};
        slim_status rst = slim_tfrecord_next(r, &d, &len, &off, &e);
        if (!rst && !d)
            break;
        if (rst) { /* the framing is lost: nothing after it can be trusted */
            if (o->on_error != SLIM_ON_ERROR_SKIP) {
                *err = e;
                st = rst;
            } else {
                skipped++;
                if (!first_skip[0])
                    snprintf(first_skip, sizeof first_skip, "%.900s (and the rest of the file)",
                             e.msg);
                slim__log(SLIM_LOG_WARN, "skipped: %s (and the rest of the file)", e.msg);
            }
            break;
        }
        char where[PATH_MAX + 64];
        snprintf(where, sizeof where, "%s: record %lld at byte %lld", in, (long long)recs,
                 (long long)off);
        uint8_t *ex = NULL;
        size_t exlen = 0;
        bool indexed = false;
        rst = reindex(j, d, len, where, &ex, &exlen, &indexed, &e);
        if (rst && o->on_error != SLIM_ON_ERROR_SKIP) {
            *err = e;
            st = rst;
            free(ex);
            break;
        }
        if (rst) { /* kept as it is: the pipeline's own policy decides when it is read */
            kept++;
            if (!first_skip[0])
                snprintf(first_skip, sizeof first_skip, "%s", e.msg);
            slim__log(SLIM_LOG_WARN, "kept as it is: %s", e.msg);
        } else if (!indexed) {
            kept++;
        }
        st = ex ? slim_tfrecord_write(w, ex, exlen, err) : slim_tfrecord_write(w, d, len, err);
        free(ex);
        if (st)
            break;
        recs++;
        idx += indexed;
        if (recs % 256 == 0 && o->progress) {
            pthread_mutex_lock(&j->mu);
            j->live += 256;
            o->progress(j->done, j->n, j->live, 0, j->skipped, o->progress_user);
            pthread_mutex_unlock(&j->mu);
        }
    }
    slim_tfrecord_close(r);
    if ((st = slim__shard_commit(w, st, tmp, final, err)))
        return st;
    pthread_mutex_lock(&j->mu);
    j->records += recs;
    j->indexed += idx;
    j->kept += kept;
    j->skipped += skipped;
    if (first_skip[0] && !j->first_skip[0])
        snprintf(j->first_skip, sizeof j->first_skip, "%s", first_skip);
    pthread_mutex_unlock(&j->mu);
    return SLIM_OK;
}

static void *worker(void *arg)
{
    rjob *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int s = j->failed || j->next >= j->n ? -1 : j->next++;
        pthread_mutex_unlock(&j->mu);
        if (s < 0)
            return NULL;
        slim_error e = {0};
        slim_status st = do_shard(j, j->files[s], &e);
        pthread_mutex_lock(&j->mu);
        if (st && !j->failed) {
            j->failed = true;
            j->err = e;
        }
        j->done++;
        if (j->o->progress)
            j->o->progress(j->done, j->n, j->live, 0, j->skipped, j->o->progress_user);
        pthread_mutex_unlock(&j->mu);
    }
}

/* OUT/name from the first shard's folder when OUT has none. */
static void copy_beside(const char *first, const char *outdir, const char *name)
{
    char src[PATH_MAX + 64], dst[PATH_MAX + 64];
    const char *slash = strrchr(first, '/');
    int dl = slash ? (int)(slash - first) : 1;
    snprintf(src, sizeof src, "%.*s/%s", dl, slash ? first : ".", name);
    snprintf(dst, sizeof dst, "%s/%s", outdir, name);
    if (access(dst, F_OK) == 0 || access(src, R_OK) != 0)
        return;
    FILE *a = fopen(src, "rbe"), *b = a ? fopen(dst, "wbe") : NULL;
    char buf[8192];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n)
            break;
    if (a)
        fclose(a);
    if (b)
        fclose(b);
}

slim_status slim__convert_records(const char *const *files, int n, const char *image_key,
                                  const convert_opts *o, convert_result *res, slim_error *err)
{
    memset(res, 0, sizeof *res);
    if (n <= 0)
        return slim__error(err, SLIM_EINVAL, "--input_records: no files");
    if (mkdir(o->output_dir, 0755) != 0 && errno != EEXIST)
        return slim__data_error(err, SLIM_EIO, o->output_dir, "%s: cannot create: %s",
                                o->output_dir, strerror(errno));
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (!strcmp(base_name(files[a]), base_name(files[b])))
                return slim__error(err, SLIM_EINVAL,
                                   "--input_records: %s and %s have the same name; the output "
                                   "keeps the names",
                                   files[a], files[b]);
    rjob j = {.o = o, .image_key = image_key ? image_key : "image/encoded", .files = files, .n = n};
    pthread_mutex_init(&j.mu, NULL);
    int nt = o->num_threads > 0 ? o->num_threads : 1;
    nt = nt > n ? n : nt;
    pthread_t th[64];
    nt = nt > 64 ? 64 : nt;
    int started = 0;
    for (; started < nt - 1; started++)
        if (pthread_create(&th[started], NULL, worker, &j))
            break;
    worker(&j);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    res->images = j.records;
    res->skipped = j.skipped;
    res->shards = n;
    res->shards_resumed = j.resumed;
    res->indexed = j.indexed;
    res->kept = j.kept;
    snprintf(res->first_skip, sizeof res->first_skip, "%s", j.first_skip);
    if (j.failed) {
        if (err)
            *err = j.err;
        return j.err.code ? j.err.code : SLIM_EIO;
    }
    copy_beside(files[0], o->output_dir, "labels.txt");
    copy_beside(files[0], o->output_dir, "dataset.yaml");
    return SLIM_OK;
}
