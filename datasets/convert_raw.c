/* datasets/convert_raw.c - IDX (MNIST, Fashion-MNIST) and CIFAR-10/100 binary
 * batches -> TFRecord files as TF-Slim's download_and_convert_{mnist,cifar10}.py
 * write them: one file per split, PNG-encoded images (or raw bytes), TF-Slim's
 * keys, labels.txt with the class names. */
#include "datasets/convert.h"
#include "datasets/idx.h"
#include "datasets/tfrecord.h"
#include "core/error.h"
#include "core/file.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- IDX and CIFAR ------------------------------------------------------------ */

/* Write examples (image HxWxC u8 planes given per example) to one file, atomically. */
typedef struct rawset {
    int n, h, w, c;
    const uint8_t *pixels; /* n x h x w x c (HWC) */
    const uint8_t *labels; /* n */
} rawset;

/* One example of a rawset, serialized into *out (malloc). */
static slim_status encode_raw_example(const rawset *rs, int i, bool raw, uint8_t **out, size_t *len,
                                      slim_error *err)
{
    size_t per = (size_t)rs->h * rs->w * rs->c;
    slim_example *ex;
    slim_status st = slim_example_new(&ex, err);
    if (st)
        return st;
    const uint8_t *px = rs->pixels + per * (size_t)i;
    if (raw) {
        int64_t c = rs->c;
        slim_example_set_bytes(ex, "image/encoded", px, per);
        slim_example_set_bytes(ex, "image/format", "raw", 3);
        slim_example_set_int64s(ex, "image/channels", &c, 1);
    } else {
        slim_image img = {
            .height = rs->h, .width = rs->w, .channels = rs->c, .data = (uint8_t *)px};
        uint8_t *png;
        size_t plen;
        st = slim_image_encode_png(&img, &png, &plen, err);
        if (st) {
            slim_example_free(ex);
            return st;
        }
        slim_example_set_bytes(ex, "image/encoded", png, plen);
        slim_example_set_bytes(ex, "image/format", "png", 3);
        free(png);
    }
    /* TF-Slim dataset_utils.image_to_tfexample: label, height, width. */
    int64_t lab = rs->labels[i], h = rs->h, wd = rs->w;
    slim_example_set_int64s(ex, "image/class/label", &lab, 1);
    slim_example_set_int64s(ex, "image/height", &h, 1);
    slim_example_set_int64s(ex, "image/width", &wd, 1);
    st = slim_example_serialize(ex, out, len, err);
    slim_example_free(ex);
    return st;
}

#define RAW_CHUNK 2048

typedef struct rawjob {
    const rawset *rs;
    bool raw;
    int lo, hi; /* this thread's examples */
    uint8_t **bufs;
    size_t *lens;
    slim_status st;
    slim_error err;
} rawjob;

static void *encode_range(void *arg)
{
    rawjob *j = arg;
    for (int i = j->lo; i < j->hi && !j->st; i++)
        j->st = encode_raw_example(j->rs, i, j->raw, &j->bufs[i % RAW_CHUNK],
                                   &j->lens[i % RAW_CHUNK], &j->err);
    return NULL;
}

/* Encode (PNG) in parallel, chunk by chunk; write in order to one file, atomically. */
static slim_status write_rawset(const convert_opts *o, const char *path, const rawset *rs,
                                convert_result *res, int step, int steps, slim_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    slim_tfrecord_writer *w;
    slim_status st = slim_tfrecord_writer_new(tmp, o->compression, &w, err);
    if (st)
        return st;
    bool raw = o->image_format && !strcmp(o->image_format, "raw");
    int nt = o->num_threads > 0 ? o->num_threads : 1;
    if (nt > 64)
        nt = 64;
    uint8_t **bufs = calloc(RAW_CHUNK, sizeof *bufs);
    size_t *lens = calloc(RAW_CHUNK, sizeof *lens);
    if (!bufs || !lens)
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    for (int c0 = 0; c0 < rs->n && !st; c0 += RAW_CHUNK) {
        int c1 = c0 + RAW_CHUNK < rs->n ? c0 + RAW_CHUNK : rs->n;
        rawjob jobs[64];
        pthread_t th[64];
        for (int t = 0; t < nt; t++) {
            jobs[t] = (rawjob){
                rs,      raw, c0 + (c1 - c0) * t / nt, c0 + (c1 - c0) * (t + 1) / nt, bufs, lens,
                SLIM_OK, {0}};
            if (t > 0)
                pthread_create(&th[t], NULL, encode_range, &jobs[t]);
        }
        encode_range(&jobs[0]);
        for (int t = 1; t < nt; t++)
            pthread_join(th[t], NULL);
        for (int t = 0; t < nt && !st; t++)
            if (jobs[t].st) {
                st = jobs[t].st;
                if (err)
                    *err = jobs[t].err;
            }
        for (int i = c0; i < c1; i++) {
            if (!st)
                st = slim_tfrecord_write(w, bufs[i - c0], lens[i - c0], err);
            free(bufs[i - c0]);
            bufs[i - c0] = NULL;
        }
        if (o->progress)
            o->progress(step, steps, res->images + c1, -1, 0, o->progress_user);
    }
    free(bufs);
    free(lens);
    if ((st = slim__shard_commit(w, st, tmp, path, err)))
        return st;
    res->images += rs->n;
    res->shards++;
    return SLIM_OK;
}

static const char *const mnist_names[10] = {"zero", "one", "two",   "three", "four",
                                            "five", "six", "seven", "eight", "nine"};
static const char *const fashion_names[10] = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                              "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                              "Bag",         "Ankle boot"};
static const char *const cifar10_names[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                              "dog",      "frog",       "horse", "ship", "truck"};

/* dir/name or dir/name.gz, whichever exists. */
static bool find_file(const char *dir, const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", dir, name);
    if (access(out, R_OK) == 0)
        return true;
    snprintf(out, n, "%s/%s.gz", dir, name);
    return access(out, R_OK) == 0;
}

slim_status slim__convert_idx(const char *name, const convert_opts *o, convert_result *res,
                              slim_error *err)
{
    memset(res, 0, sizeof *res);
    if (!o->input_dir || !o->output_dir)
        return slim__error(err, SLIM_EINVAL,
                           "convert needs --input_dir (the IDX files) and --dataset_dir");
    if (mkdir(o->output_dir, 0755) != 0 && errno != EEXIST)
        return slim__data_error(err, SLIM_EIO, o->output_dir, "%s: cannot create: %s",
                                o->output_dir, strerror(errno));
    const char *splits[2] = {"train", "test"}, *prefix[2] = {"train", "t10k"};
    slim_status st = SLIM_OK;
    for (int s = 0; s < 2 && !st; s++) {
        char ip[4096], lp[4096], fn[256], out[4096];
        snprintf(fn, sizeof fn, "%s-images-idx3-ubyte", prefix[s]);
        if (!find_file(o->input_dir, fn, ip, sizeof ip))
            return slim__error(err, SLIM_ENOTFOUND, "%s: no %s or %s.gz", o->input_dir, fn, fn);
        snprintf(fn, sizeof fn, "%s-labels-idx1-ubyte", prefix[s]);
        if (!find_file(o->input_dir, fn, lp, sizeof lp))
            return slim__error(err, SLIM_ENOTFOUND, "%s: no %s or %s.gz", o->input_dir, fn, fn);
        slim_idx im, lb;
        if ((st = slim_idx_read(ip, &im, err)))
            return st;
        if ((st = slim_idx_read(lp, &lb, err))) {
            slim_idx_fini(&im);
            return st;
        }
        if (im.shape.rank != 3 || lb.shape.rank != 1 || im.shape.dim[0] != lb.shape.dim[0]) {
            st = slim__error(err, SLIM_ECORRUPT, "%s and %s do not hold N images and N labels", ip,
                             lp);
        } else {
            rawset rs = {(int)im.shape.dim[0],
                         (int)im.shape.dim[1],
                         (int)im.shape.dim[2],
                         1,
                         im.data,
                         lb.data};
            snprintf(out, sizeof out, "%s/%s_%s.tfrecord", o->output_dir, name, splits[s]);
            st = write_rawset(o, out, &rs, res, s, 2, err);
        }
        slim_idx_fini(&im);
        slim_idx_fini(&lb);
    }
    res->num_classes = 10;
    if (!st)
        st = slim__write_labels(o->output_dir,
                                strstr(name, "fashion") ? fashion_names : mnist_names, 10, 0, err);
    return st;
}

slim_status slim__convert_cifar(const char *name, const convert_opts *o, convert_result *res,
                                slim_error *err)
{
    memset(res, 0, sizeof *res);
    bool c100 = !strcmp(name, "cifar100");
    if (!o->input_dir || !o->output_dir)
        return slim__error(err, SLIM_EINVAL,
                           "convert needs --input_dir (the binary batches) and --dataset_dir");
    if (mkdir(o->output_dir, 0755) != 0 && errno != EEXIST)
        return slim__data_error(err, SLIM_EIO, o->output_dir, "%s: cannot create: %s",
                                o->output_dir, strerror(errno));
    char dir[4096], probe[4200];
    snprintf(dir, sizeof dir, "%s", o->input_dir);
    snprintf(probe, sizeof probe, "%s/%s", dir, c100 ? "train.bin" : "data_batch_1.bin");
    if (access(probe, R_OK) != 0) /* the tarballs unpack into a subfolder */
        snprintf(dir, sizeof dir, "%s/%s", o->input_dir,
                 c100 ? "cifar-100-binary" : "cifar-10-batches-bin");
    const int rec = c100 ? 3074 : 3073,
              lab_off = c100 ? 1 : 0; /* CIFAR-100: coarse, fine, pixels */
    const char *train10[5] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                              "data_batch_4.bin", "data_batch_5.bin"};
    slim_status st = SLIM_OK;
    for (int s = 0; s < 2 && !st; s++) {
        const char *const *fl = s == 0 ? (c100 ? (const char *const[]){"train.bin"} : train10)
                                       : (c100 ? (const char *const[]){"test.bin"}
                                               : (const char *const[]){"test_batch.bin"});
        int nf = s == 0 && !c100 ? 5 : 1;
        uint8_t *px = NULL, *lb = NULL;
        int n = 0;
        for (int k = 0; k < nf && !st; k++) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, fl[k]);
            size_t len;
            uint8_t *b;
            slim_error re = {0};
            if ((st = slim__file_read(p, "CIFAR batch", 0, &b, &len, &re))) {
                st = slim__data_error(err, st, p, "%s", re.msg);
                break;
            }
            if (len % (size_t)rec) {
                st = slim__data_error(
                    err, SLIM_ECORRUPT, p,
                    "%s: byte %zu: %zu bytes is not a whole number of %d-byte records", p,
                    len - len % (size_t)rec, len, rec);
                free(b);
                break;
            }
            int m = (int)(len / (size_t)rec);
            px = realloc(px, (size_t)(n + m) * 3072);
            lb = realloc(lb, (size_t)(n + m));
            for (int i = 0; i < m; i++) {
                const uint8_t *r = b + (size_t)i * rec;
                lb[n + i] = r[lab_off];
                if (lb[n + i] >= (c100 ? 100 : 10)) {
                    st = slim__data_error(err, SLIM_ECORRUPT, p,
                                          "%s: byte %zu: label %d out of range", p,
                                          (size_t)i * rec + lab_off, lb[n + i]);
                    break;
                }
                /* planes R, G, B of 32x32 -> HWC */
                uint8_t *d = px + (size_t)(n + i) * 3072;
                for (int y = 0; y < 1024; y++)
                    for (int c = 0; c < 3; c++)
                        d[y * 3 + c] = r[lab_off + 1 + c * 1024 + y];
            }
            n += m;
            free(b);
        }
        if (!st) {
            rawset rs = {n, 32, 32, 3, px, lb};
            char out[4400];
            snprintf(out, sizeof out, "%s/%s_%s.tfrecord", o->output_dir, name,
                     s ? "test" : "train");
            st = write_rawset(o, out, &rs, res, s, 2, err);
        }
        free(px);
        free(lb);
    }
    res->num_classes = c100 ? 100 : 10;
    if (!st) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, c100 ? "fine_label_names.txt" : "batches.meta.txt");
        int nl;
        char **names = slim__read_lines(p, &nl);
        if (names && nl >= res->num_classes)
            st = slim__write_labels(o->output_dir, (const char *const *)names, res->num_classes, 0,
                                    err);
        else if (!c100)
            st = slim__write_labels(o->output_dir, cifar10_names, 10, 0, err);
        slim__free_lines(names, names ? nl : 0);
    }
    return st;
}
