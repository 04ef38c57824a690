/*
 * tools/cmd_data.c - `slimrun convert` and `slimrun data info|decode|preview`.
 *
 *   slimrun convert --input_dir=IMAGES --dataset_dir=OUT [--shards=N | --size_per_record=50MB]
 *   slimrun convert --dataset_name=fashion_mnist --input_dir=/usr/share/datasets/fashion-mnist
 *                   --dataset_dir=OUT
 *   slimrun data info FILE... [--verify]
 *   slimrun data decode IMAGE --out=FILE.png [--channels=3] [--exif_orientation]
 *   slimrun data preview --pipeline=inception DATA --out=grid.png [--num=16] [--is_training]
 */
#include "datasets/convert.h"
#include "datasets/jpeg_index.h"
#include "core/file.h"
#include "runtime/train_internal.h"
#include "tools/cmd.h"
#include "tools/flags.h"
#include <slim/data.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- a small flag parser: --name=value, --name value, --flag, --noflag ------- */

typedef enum { F_STR, F_INT, F_I64, F_BOOL, F_SIZE } ftype;

typedef struct fdef {
    const char *name;
    ftype type;
    void *p;
    const char *help;
} fdef;

static int parse_size(const char *s, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    double m = 1;
    if (!strcasecmp(end, "k") || !strcasecmp(end, "kb"))
        m = 1e3;
    else if (!strcasecmp(end, "m") || !strcasecmp(end, "mb"))
        m = 1e6;
    else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb"))
        m = 1e9;
    else if (!strcasecmp(end, "kib"))
        m = 1024;
    else if (!strcasecmp(end, "mib"))
        m = 1 << 20;
    else if (!strcasecmp(end, "gib"))
        m = 1 << 30;
    else if (*end)
        return -1;
    *out = (int64_t)(v * m);
    return 0;
}

/* Returns 0, 1 for --help, 2 on a usage error (printed). pos gets the positionals. */
static int parse_flags(const char *cmd, const fdef *defs, int n, int argc, char **argv,
                       const char **pos, int *npos, int maxpos)
{
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (strncmp(a, "--", 2) != 0) {
            if (*npos >= maxpos) {
                fprintf(stderr, "slimrun %s: unexpected argument '%s'\n", cmd, a);
                return 2;
            }
            pos[(*npos)++] = a;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const fdef *d = NULL;
        bool neg = false;
        for (int k = 0; k < n; k++)
            if (strlen(defs[k].name) == len && !strncmp(defs[k].name, name, len))
                d = &defs[k];
        if (!d && len > 2 && !strncmp(name, "no", 2))
            for (int k = 0; k < n; k++)
                if (defs[k].type == F_BOOL && strlen(defs[k].name) == len - 2 &&
                    !strncmp(defs[k].name, name + 2, len - 2))
                    d = &defs[k], neg = true;
        if (!d) {
            fprintf(stderr, "slimrun %s: unknown flag --%.*s (see slimrun %s --help)\n", cmd,
                    (int)len, name, cmd);
            return 2;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (d->type == F_BOOL) {
            bool v = !neg;
            if (val)
                v = !strcmp(val, "true") || !strcmp(val, "1") || !strcmp(val, "yes");
            *(bool *)d->p = v;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "slimrun %s: --%s needs a value\n", cmd, d->name);
                return 2;
            }
            if (flags_is_flag(argv[i + 1])) { /* never eat the next flag */
                fprintf(stderr,
                        "slimrun %s: --%s needs a value, and the next argument, %s, is a flag "
                        "(write --%s=%s if that is the value)\n",
                        cmd, d->name, argv[i + 1], d->name, argv[i + 1]);
                return 2;
            }
            val = argv[++i];
        }
        char *end;
        switch (d->type) {
        case F_STR: *(const char **)d->p = val; break;
        case F_INT:
        case F_I64: {
            long long v = strtoll(val, &end, 10);
            if (*end || end == val) {
                fprintf(stderr, "slimrun %s: --%s expects an integer, got '%s'\n", cmd, d->name,
                        val);
                return 2;
            }
            if (d->type == F_INT)
                *(int *)d->p = (int)v;
            else
                *(int64_t *)d->p = v;
            break;
        }
        case F_SIZE:
            if (parse_size(val, (int64_t *)d->p)) {
                fprintf(stderr, "slimrun %s: --%s expects a size like 50MB, got '%s'\n", cmd,
                        d->name, val);
                return 2;
            }
            break;
        default: break;
        }
    }
    return 0;
}

static void usage(FILE *f, const char *synopsis, const fdef *defs, int n)
{
    fprintf(f, "%s\n\nflags:\n", synopsis);
    for (int k = 0; k < n; k++)
        fprintf(f, "  --%-20s %s\n", defs[k].name, defs[k].help);
}

static int fail(const char *cmd, const slim_error *err)
{
    fprintf(stderr, "slimrun %s: %s\n", cmd, err->msg);
    return 1;
}

/* ---- convert ------------------------------------------------------------------ */

typedef struct prog {
    double t0;
    bool tty;
    const char *what;
} prog;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_progress(int sd, int shards, int64_t done, int64_t total, int64_t skipped, void *u)
{
    prog *p = u;
    if (!p->tty)
        return;
    double dt = now_s() - p->t0, rate = dt > 0 ? (double)done / dt : 0;
    char eta[32] = "";
    if (total > 0 && rate > 0) {
        int s = (int)((double)(total - done) / rate);
        snprintf(eta, sizeof eta, "  ETA %d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
    }
    char skip[40] = "";
    if (skipped)
        snprintf(skip, sizeof skip, "  %lld skipped", (long long)skipped);
    if (total > 0)
        fprintf(stderr, "\r%s: %d/%d shards  %lld/%lld images  %.0f img/s%s%s\033[K", p->what, sd,
                shards, (long long)done, (long long)total, rate, eta, skip);
    else
        fprintf(stderr, "\r%s: part %d/%d  %lld images  %.0f img/s   ", p->what, sd + 1, shards,
                (long long)done, rate);
    fflush(stderr);
}

/* --input_records: expand the comma-separated globs, rewrite the shards. */
static int convert_records(const char *list, const char *image_key, convert_opts *o)
{
    glob_t g = {0};
    char *copy = strdup(list);
    int flags = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save), flags = GLOB_APPEND)
        if (glob(tok, flags | GLOB_NOCHECK, NULL, &g) != 0)
            break;
    free(copy);
    prog pg = {now_s(), isatty(2), "convert"};
    o->progress = on_progress;
    o->progress_user = &pg;
    convert_result res;
    slim_error err = {0};
    slim_status st = slim__convert_records((const char *const *)g.gl_pathv, (int)g.gl_pathc,
                                           image_key, o, &res, &err);
    globfree(&g);
    if (pg.tty)
        fprintf(stderr, "\n");
    if (st)
        return fail("convert", &err);
    double dt = now_s() - pg.t0;
    printf("rewrote %lld records in %d shard%s%s to %s: %lld JPEGs restart-indexed, %lld records "
           "kept as they were (%.1f s, %.0f records/s)\n",
           (long long)res.images, res.shards, res.shards == 1 ? "" : "s",
           res.shards_resumed ? " (some already there)" : "", o->output_dir, (long long)res.indexed,
           (long long)res.kept, dt, dt > 0 ? (double)res.images / dt : 0);
    if (res.skipped)
        printf("dropped the rest of %lld file%s after a corrupt record, e.g. %s\n",
               (long long)res.skipped, res.skipped == 1 ? "" : "s", res.first_skip);
    else if (res.first_skip[0])
        printf("kept a record whose image did not transcode: %s\n", res.first_skip);
    return 0;
}

static int cmd_convert(int argc, char **argv)
{
    convert_opts o = {0};
    const char *on_error = "fail", *compression = "none";
    bool shuffle = true, jpeg_restart = true;
    const char *input_records = NULL, *image_key = NULL;
    o.num_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    fdef defs[] = {
        {"dataset_name", F_STR, &o.dataset_name,
         "mnist, fashion_mnist, cifar10, cifar100 (IDX/binary sources), or a name for the shards"},
        {"input_dir", F_STR, &o.input_dir,
         "source: class folders of images, or the IDX/CIFAR files"},
        {"dataset_dir", F_STR, &o.output_dir,
         "where the TFRecord shards, labels.txt, dataset.yaml go"},
        {"split", F_STR, &o.split, "split name of a folder conversion (default train)"},
        {"shards", F_INT, &o.shards, "number of shards (default: by --size_per_record)"},
        {"size_per_record", F_SIZE, &o.size_per_record,
         "shard size when --shards is not given (default 50MB)"},
        {"validation_size", F_INT, &o.validation_size,
         "also write a validation split of N images (TF-Slim flowers)"},
        {"synsets", F_STR, &o.synsets, "ImageNet synset list: label = 1 + line (0 = background)"},
        {"metadata", F_STR, &o.metadata,
         "imagenet_metadata.txt: image/class/text and labels.txt names"},
        {"image_labels", F_STR, &o.image_labels,
         "flat folder: one synset per sorted image (ImageNet val)"},
        {"bounding_boxes", F_STR, &o.bounding_boxes,
         "CSV 'file,xmin,ymin,xmax,ymax' per box (ImageNet's): image/object/bbox/*"},
        {"num_threads", F_INT, &o.num_threads, "shards written in parallel (default: cores)"},
        {"seed", F_I64, &o.seed, "shuffle seed (default 0)"},
        {"shuffle", F_BOOL, &shuffle, "shuffle the images before sharding (default true)"},
        {"verify_decode", F_BOOL, &o.verify_decode,
         "decode every image fully (default: header check)"},
        {"input_records", F_STR, &input_records,
         "TFRecord shards (comma-separated files or globs) to rewrite into --dataset_dir with "
         "their JPEGs restart-indexed, all else kept"},
        {"image_key", F_STR, &image_key,
         "--input_records: the image feature (default image/encoded)"},
        {"jpeg_restart", F_BOOL, &jpeg_restart,
         "store JPEGs losslessly transcoded with a restart marker per MCU, so random crops "
         "decode only their MCUs (default true; --nojpeg_restart keeps the bytes)"},
        {"overwrite", F_BOOL, &o.overwrite, "replace a previous conversion made from other input"},
        {"on_error", F_STR, &on_error, "fail | skip unreadable images (default fail)"},
        {"compression", F_STR, &compression, "none | gzip | zlib (default none)"},
        {"image_format", F_STR, &o.image_format, "IDX/CIFAR: png (TF-Slim, default) | raw"},
    };
    int nd = (int)(sizeof defs / sizeof *defs);
    const char *pos[1];
    int npos;
    int r = parse_flags("convert", defs, nd, argc, argv, pos, &npos, 0);
    if (r == 1) {
        usage(stdout,
              "usage: slimrun convert --input_dir=DIR --dataset_dir=OUT [flags]\n\n"
              "Converts a folder of class folders of JPEG/PNG images (ImageNet's train/<synset>/ "
              "layout\n"
              "or any class/*.jpg tree), MNIST/Fashion-MNIST IDX files or CIFAR-10/100 binary "
              "batches\n"
              "to TFRecord shards of tf.train.Example with TF-Slim's keys. Folder conversions are\n"
              "parallel and resumable (run the same command again after an interruption).",
              defs, nd);
        return 0;
    }
    if (r)
        return 2;
    o.no_shuffle = !shuffle;
    o.keep_jpeg_bytes = !jpeg_restart;
    if (!strcmp(on_error, "skip"))
        o.on_error = SLIM_ON_ERROR_SKIP;
    else if (strcmp(on_error, "fail")) {
        fprintf(stderr, "slimrun convert: --on_error is fail or skip\n");
        return 2;
    }
    if (!strcmp(compression, "gzip"))
        o.compression = SLIM_COMPRESSION_GZIP;
    else if (!strcmp(compression, "zlib"))
        o.compression = SLIM_COMPRESSION_ZLIB;
    else if (!strcmp(compression, "none"))
        o.compression = SLIM_COMPRESSION_NONE;
    else {
        fprintf(stderr, "slimrun convert: --compression is none, gzip or zlib\n");
        return 2;
    }
    if (o.image_format && strcmp(o.image_format, "png") && strcmp(o.image_format, "raw")) {
        fprintf(stderr, "slimrun convert: --image_format is png or raw\n");
        return 2;
    }
    if (o.output_dir) { /* its missing parents are made, as train makes --train_dir's */
        char parent[1024];
        snprintf(parent, sizeof parent, "%s", o.output_dir);
        char *slash = strrchr(parent, '/');
        while (slash && slash > parent && slash[1] == 0) { /* "a/b/" */
            *slash = 0;
            slash = strrchr(parent, '/');
        }
        if (slash && slash > parent) {
            *slash = 0;
            slim_error me = {0};
            if (slim__rt_mkdirs(parent, &me))
                return fail("convert", &me);
        }
    }
    if (input_records && o.output_dir)
        return convert_records(input_records, image_key, &o);
    if (!o.input_dir || !o.output_dir) {
        fprintf(stderr, "slimrun convert: --input_dir (or --input_records) and --dataset_dir are "
                        "required\n");
        return 2;
    }
    prog pg = {now_s(), isatty(2), "convert"};
    o.progress = on_progress;
    o.progress_user = &pg;
    convert_result res;
    slim_error err = {0};
    slim_status st;
    const char *n = o.dataset_name ? o.dataset_name : "";
    bool idx = !strcmp(n, "mnist") || !strcmp(n, "fashion_mnist") || !strcmp(n, "fashion-mnist");
    bool cifar = !strcmp(n, "cifar10") || !strcmp(n, "cifar100");
    if (idx)
        st = slim__convert_idx(!strcmp(n, "mnist") ? "mnist" : "fashion_mnist", &o, &res, &err);
    else if (cifar)
        st = slim__convert_cifar(n, &o, &res, &err);
    else
        st = slim__convert_folder(&o, &res, &err);
    if (pg.tty)
        fprintf(stderr, "\n");
    if (st)
        return fail("convert", &err);
    double dt = now_s() - pg.t0;
    printf("wrote %lld images in %d shard%s%s to %s (%d classes, %.1f s, %.0f images/s)\n",
           (long long)res.images, res.shards, res.shards == 1 ? "" : "s",
           res.shards_resumed ? " (some resumed)" : "", o.output_dir, res.num_classes, dt,
           dt > 0 ? (double)res.images / dt : 0);
    if (res.shards_resumed)
        printf("resumed: %d shard%s were already complete\n", res.shards_resumed,
               res.shards_resumed == 1 ? "" : "s");
    if (res.skipped)
        printf("skipped %lld unreadable image%s, e.g. %s\n", (long long)res.skipped,
               res.skipped == 1 ? "" : "s", res.first_skip);
    return 0;
}

const slim_command slim_cmd_convert = {"convert", "images, IDX or CIFAR files -> TFRecord shards",
                                       cmd_convert};

/* ---- data info ------------------------------------------------------------------ */

typedef struct keystat {
    char *key;
    slim_feature_kind kind;
    int64_t count;
    size_t min_n, max_n;
} keystat;

typedef struct info_acc {
    keystat keys[128];
    int nkeys;
    int64_t records, bytes, errors, images;
    int64_t *hist; /* label histogram */
    int64_t hist_lo, hist_n;
    int64_t min_h, max_h, min_w, max_w;
    double sum_h, sum_w;
    char formats[8][16];
    int64_t format_n[8];
    int nformats;
    int64_t indexed; /* restart-indexed JPEGs */
} info_acc;

static void hist_add(info_acc *a, int64_t l)
{
    if (!a->hist) {
        a->hist_lo = l;
        a->hist_n = 1;
        a->hist = calloc(1, sizeof *a->hist);
    }
    if (l < a->hist_lo) {
        int64_t add = a->hist_lo - l;
        if (a->hist_n + add > 1 << 24)
            return;
        int64_t *nh = calloc((size_t)(a->hist_n + add), sizeof *nh);
        memcpy(nh + add, a->hist, sizeof *nh * (size_t)a->hist_n);
        free(a->hist);
        a->hist = nh;
        a->hist_n += add;
        a->hist_lo = l;
    } else if (l >= a->hist_lo + a->hist_n) {
        int64_t nn = l - a->hist_lo + 1;
        if (nn > 1 << 24)
            return;
        a->hist = realloc(a->hist, sizeof *a->hist * (size_t)nn);
        memset(a->hist + a->hist_n, 0, sizeof *a->hist * (size_t)(nn - a->hist_n));
        a->hist_n = nn;
    }
    a->hist[l - a->hist_lo]++;
}

static const char *kind_name(slim_feature_kind k)
{
    return k == SLIM_FEATURE_BYTES   ? "bytes"
           : k == SLIM_FEATURE_FLOAT ? "float"
           : k == SLIM_FEATURE_INT64 ? "int64"
                                     : "empty";
}

static void info_record(info_acc *a, const slim_example *ex, const char *image_key,
                        const char *label_key, bool verify, const char *where, int *err_left)
{
    for (int i = 0; i < slim_example_count(ex); i++) {
        slim_feature_kind kind;
        size_t n;
        const char *k = slim_example_key(ex, i, &kind, &n);
        int j;
        for (j = 0; j < a->nkeys && strcmp(a->keys[j].key, k); j++)
            ;
        if (j == a->nkeys) {
            if (a->nkeys == 128)
                continue;
            a->keys[j] = (keystat){strdup(k), kind, 0, n, n};
            a->nkeys++;
        }
        keystat *s = &a->keys[j];
        s->count++;
        s->min_n = n < s->min_n ? n : s->min_n;
        s->max_n = n > s->max_n ? n : s->max_n;
    }
    const int64_t *v;
    size_t n;
    if (!slim_example_int64s(ex, label_key, &v, &n) && n > 0)
        hist_add(a, v[0]);
    const uint8_t *img;
    size_t ilen;
    int64_t h = 0, w = 0;
    if (!slim_example_int64s(ex, "image/height", &v, &n) && n)
        h = v[0];
    if (!slim_example_int64s(ex, "image/width", &v, &n) && n)
        w = v[0];
    if (!slim_example_bytes(ex, image_key, 0, &img, &ilen)) {
        slim_image_format f = slim_image_sniff(img, ilen);
        const char *fn = f == SLIM_IMAGE_JPEG ? "JPEG" : f == SLIM_IMAGE_PNG ? "PNG" : "other";
        int k;
        for (k = 0; k < a->nformats && strcmp(a->formats[k], fn); k++)
            ;
        if (k == a->nformats && k < 8)
            snprintf(a->formats[a->nformats++], 16, "%s", fn);
        if (k < 8)
            a->format_n[k]++;
        if (f == SLIM_IMAGE_JPEG && slim__jpeg_is_indexed(img, ilen))
            a->indexed++;
        if ((!h || !w || verify) && f != SLIM_IMAGE_UNKNOWN) {
            int ph, pw, pc;
            slim_error e = {0};
            if (slim_image_probe(img, ilen, where, &ph, &pw, &pc, &e) == SLIM_OK) {
                if (verify && h && w && (ph != h || pw != w)) {
                    a->errors++;
                    if ((*err_left)-- > 0)
                        fprintf(stderr,
                                "%s: image/height,width say %lldx%lld, the image is %dx%d\n", where,
                                (long long)h, (long long)w, ph, pw);
                }
                h = ph;
                w = pw;
            } else {
                a->errors++;
                if ((*err_left)-- > 0)
                    fprintf(stderr, "%s\n", e.msg);
            }
        }
    }
    if (h > 0 && w > 0) {
        if (!a->images) {
            a->min_h = a->max_h = h;
            a->min_w = a->max_w = w;
        }
        a->images++;
        a->min_h = h < a->min_h ? h : a->min_h;
        a->max_h = h > a->max_h ? h : a->max_h;
        a->min_w = w < a->min_w ? w : a->min_w;
        a->max_w = w > a->max_w ? w : a->max_w;
        a->sum_h += (double)h;
        a->sum_w += (double)w;
    }
}

static void info_print(const info_acc *a, const char *label_key)
{
    printf("keys:\n");
    for (int j = 0; j < a->nkeys; j++) {
        const keystat *s = &a->keys[j];
        char nv[64];
        if (s->min_n == s->max_n)
            snprintf(nv, sizeof nv, "x%zu", s->min_n);
        else
            snprintf(nv, sizeof nv, "x%zu..%zu", s->min_n, s->max_n);
        printf("  %-32s %-6s %-10s in %lld/%lld records\n", s->key, kind_name(s->kind), nv,
               (long long)s->count, (long long)a->records);
    }
    if (a->hist) {
        int64_t distinct = 0, mx = 0, mn = INT64_MAX;
        for (int64_t i = 0; i < a->hist_n; i++)
            if (a->hist[i]) {
                distinct++;
                mx = a->hist[i] > mx ? a->hist[i] : mx;
                mn = a->hist[i] < mn ? a->hist[i] : mn;
            }
        printf("labels (%s): %lld distinct in [%lld, %lld], %lld..%lld examples per label\n",
               label_key, (long long)distinct, (long long)a->hist_lo,
               (long long)(a->hist_lo + a->hist_n - 1), (long long)mn, (long long)mx);
        if (distinct <= 20) {
            printf("  ");
            for (int64_t i = 0; i < a->hist_n; i++)
                if (a->hist[i])
                    printf("%lld:%lld ", (long long)(a->hist_lo + i), (long long)a->hist[i]);
            printf("\n");
        }
    }
    if (a->images)
        printf("images: %lld, height %lld..%lld (mean %.0f), width %lld..%lld (mean %.0f)",
               (long long)a->images, (long long)a->min_h, (long long)a->max_h,
               a->sum_h / (double)a->images, (long long)a->min_w, (long long)a->max_w,
               a->sum_w / (double)a->images);
    for (int k = 0; k < a->nformats; k++) {
        printf("%s%s %lld", k ? ", " : "; formats: ", a->formats[k], (long long)a->format_n[k]);
        if (!strcmp(a->formats[k], "JPEG"))
            printf(" (%lld restart-indexed)", (long long)a->indexed);
    }
    if (a->images || a->nformats)
        printf("\n");
}

static int data_info(int argc, char **argv)
{
    bool verify = false;
    const char *image_key = "image/encoded", *label_key = "image/class/label";
    fdef defs[] = {
        {"verify", F_BOOL, &verify, "check every record's data CRC and every image header"},
        {"image_key", F_STR, &image_key, "the encoded image key (default image/encoded)"},
        {"label_key", F_STR, &label_key, "the label key (default image/class/label)"},
    };
    const char *pos[4096];
    int npos;
    int r = parse_flags("data info", defs, 3, argc, argv, pos, &npos, 4096);
    if (r == 1) {
        usage(stdout,
              "usage: slimrun data info FILE... [--verify]\n\nRecord counts, keys with types, "
              "label histogram and image sizes of TFRecord files.",
              defs, 3);
        return 0;
    }
    if (r)
        return 2;
    if (!npos) {
        fprintf(stderr, "slimrun data info: give one or more TFRecord files\n");
        return 2;
    }
    info_acc tot = {0};
    int err_left = 20;
    int64_t bad_files = 0;
    for (int f = 0; f < npos; f++) {
        slim_tfrecord_reader *rd;
        slim_error err = {0};
        if (slim_tfrecord_open(pos[f], SLIM_COMPRESSION_AUTO, verify, &rd, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            bad_files++;
            continue;
        }
        int64_t n = 0, bytes = 0, errors0 = tot.errors;
        slim_status st;
        for (;;) {
            const uint8_t *d;
            size_t len;
            int64_t off;
            fflush(stdout); /* keep the report and the error lines in order */
            st = slim_tfrecord_next(rd, &d, &len, &off, &err);
            if (st || !d)
                break;
            n++;
            bytes += (int64_t)len + 16;
            slim_example *ex;
            char where[4200];
            snprintf(where, sizeof where, "%s: record %lld at byte %lld", pos[f],
                     (long long)(n - 1), (long long)off);
            if (slim_example_parse(d, len, &ex, &err)) {
                tot.errors++;
                if (err_left-- > 0)
                    fprintf(stderr, "%s: %s\n", where, err.msg);
                continue;
            }
            info_record(&tot, ex, image_key, label_key, verify, where, &err_left);
            slim_example_free(ex);
        }
        const char *comp[] = {"?", "uncompressed", "GZIP", "ZLIB"};
        printf("%s: %lld records, %lld bytes%s, %s%s\n", pos[f], (long long)n, (long long)bytes,
               slim_tfrecord_compression(rd) == SLIM_COMPRESSION_NONE ? "" : " uncompressed",
               comp[slim_tfrecord_compression(rd)],
               verify && !st && tot.errors == errors0 ? ", verified" : "");
        slim_tfrecord_close(rd);
        fflush(stdout);
        if (st) {
            fprintf(stderr, "%s\n", err.msg);
            tot.errors++;
        }
        tot.records += n;
        tot.bytes += bytes;
    }
    if (npos > 1)
        printf("total: %d files, %lld records, %lld bytes\n", npos, (long long)tot.records,
               (long long)tot.bytes);
    info_print(&tot, label_key);
    for (int j = 0; j < tot.nkeys; j++)
        free(tot.keys[j].key);
    free(tot.hist);
    if (tot.errors || bad_files) {
        printf("errors: %lld\n", (long long)(tot.errors + bad_files));
        return 1;
    }
    if (verify)
        printf("verify: every CRC, Example and image header is valid\n");
    return 0;
}

/* ---- data decode -------------------------------------------------------------------- */

static int data_decode(int argc, char **argv)
{
    const char *out = NULL;
    const char *dct = "INTEGER_ACCURATE";
    int channels = 0, scale = 1;
    bool exif = false, fancy = true, recover = false;
    fdef defs[] = {
        {"out", F_STR, &out, "PNG file to write"},
        {"channels", F_INT, &channels, "0 (as stored), 1 or 3"},
        {"exif_orientation", F_BOOL, &exif, "apply the EXIF orientation"},
        {"scale_denom", F_INT, &scale, "JPEG DCT scaling 1, 2, 4, 8"},
        {"dct_method", F_STR, &dct, "JPEG IDCT: INTEGER_ACCURATE or INTEGER_FAST"},
        {"fancy_upscaling", F_BOOL, &fancy, "JPEG chroma upsampling: fancy (true) or box (false)"},
        {"try_recover_truncated", F_BOOL, &recover,
         "a JPEG that ends early: decoded, the missing rows gray (false: an error)"},
    };
    const int ndefs = (int)(sizeof defs / sizeof defs[0]);
    const char *pos[1];
    int npos;
    int r = parse_flags("data decode", defs, ndefs, argc, argv, pos, &npos, 1);
    if (r == 1) {
        usage(stdout, "usage: slimrun data decode IMAGE --out=FILE.png", defs, ndefs);
        return 0;
    }
    if (r)
        return 2;
    if (strcmp(dct, "INTEGER_ACCURATE") && strcmp(dct, "INTEGER_FAST")) {
        fprintf(stderr,
                "slimrun data decode: --dct_method=%s: expected INTEGER_ACCURATE or "
                "INTEGER_FAST\n",
                dct);
        return 2;
    }
    if (npos != 1) {
        fprintf(stderr, "slimrun data decode: give one image file\n");
        return 2;
    }
    size_t len;
    uint8_t *d;
    slim_error err = {0};
    if (slim__file_read(pos[0], "image", 0, &d, &len, &err))
        return fail("data decode", &err);
    slim_decode_opts o = {.channels = channels,
                          .exif_orientation = exif,
                          .scale_denom = scale,
                          .name = pos[0],
                          .dct_fast = !strcmp(dct, "INTEGER_FAST"),
                          .no_fancy_upscaling = !fancy,
                          .try_recover_truncated = recover};
    slim_image img;
    double t0 = now_s();
    slim_status st = slim_image_decode(d, len, &o, &img, &err);
    double t1 = now_s();
    free(d);
    if (st)
        return fail("data decode", &err);
    printf("%s: %dx%d, %d channel%s (%.2f ms)%s\n", pos[0], img.width, img.height, img.channels,
           img.channels == 1 ? "" : "s", 1e3 * (t1 - t0),
           img.truncated ? "; truncated: the rows after the end of the data are gray" : "");
    if (out) {
        st = slim_image_write_png(out, &img, &err);
        if (!st)
            printf("wrote %s\n", out);
    }
    slim_image_fini(&img);
    return st ? fail("data decode", &err) : 0;
}

/* ---- data preview ------------------------------------------------------------------- */

/* 3x5 digits for the labels under the tiles. */
static const uint16_t digits[10] = {0x7B6F, 0x2492, 0x73E7, 0x73CF, 0x5BC9,
                                    0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF};

static void draw_number(uint8_t *rgb, int W, int H, int x0, int y0, int v, int scale)
{
    char s[16];
    snprintf(s, sizeof s, "%d", v);
    for (int i = 0; s[i]; i++) {
        int dg = s[i] == '-' ? -1 : s[i] - '0';
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 3; x++) {
                bool on = dg < 0 ? y == 2 : (digits[dg] >> (14 - (y * 3 + x))) & 1;
                if (!on)
                    continue;
                for (int sy = 0; sy < scale; sy++)
                    for (int sx = 0; sx < scale; sx++) {
                        int px = x0 + (i * 4 + x) * scale + sx, py = y0 + y * scale + sy;
                        if (px >= 0 && px < W && py >= 0 && py < H)
                            memset(rgb + ((size_t)py * W + px) * 3, 255, 3);
                    }
            }
    }
}

static int data_preview(int argc, char **argv)
{
    slim_pipeline_opts o = {0};
    const char *out = "preview.png";
    int num = 16, cols = 0;
    int64_t seed = 0;
    bool training = true;
    fdef defs[] = {
        {"pipeline", F_STR, &o.recipe,
         "recipe name (inception, vgg, cifarnet, lenet) or YAML file"},
        {"out", F_STR, &out, "PNG file to write (default preview.png)"},
        {"num", F_INT, &num, "samples (default 16)"},
        {"cols", F_INT, &cols, "grid columns (default: square)"},
        {"is_training", F_BOOL, &training, "the train section with its randomness (default true)"},
        {"seed", F_I64, &seed, "seed"},
        {"image_size", F_INT, &o.image_size, "output size (default: the recipe's)"},
        {"dataset_name", F_STR, &o.dataset_name, "a known dataset (instead of files)"},
        {"dataset_dir", F_STR, &o.dataset_dir, "its directory"},
        {"split", F_STR, &o.split, "its split"},
        {"labels_offset", F_INT, &o.labels_offset, "subtracted from stored labels"},
    };
    int nd = (int)(sizeof defs / sizeof *defs);
    const char *pos[64];
    int npos;
    int r = parse_flags("data preview", defs, nd, argc, argv, pos, &npos, 64);
    if (r == 1) {
        usage(stdout,
              "usage: slimrun data preview --pipeline=RECIPE DATA... --out=grid.png\n\n"
              "DATA: TFRecord files, image files or class folders (or --dataset_dir).\n"
              "Draws preprocessed samples in a grid with their labels.",
              defs, nd);
        return 0;
    }
    if (r)
        return 2;
    char pattern[8192] = "";
    for (int i = 0; i < npos; i++) {
        strncat(pattern, i ? "," : "", sizeof pattern - strlen(pattern) - 1);
        strncat(pattern, pos[i], sizeof pattern - strlen(pattern) - 1);
    }
    if (npos)
        o.file_pattern = pattern;
    if (num < 1)
        num = 1;
    o.batch_size = num;
    o.is_training = training;
    o.seed = (uint64_t)seed;
    o.num_threads = 2;
    o.num_epochs = 1;
    o.shuffle_buffer = training ? 4 * num : 0;
    slim_pipeline *p;
    slim_error err = {0};
    if (slim_pipeline_new(&o, &p, &err))
        return fail("data preview", &err);
    int N, H, W, C;
    slim_pipeline_shape(p, &N, &H, &W, &C);
    float *x = malloc(sizeof(float) * (size_t)N * H * W * C);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)N);
    slim_batch_info bi;
    slim_status st = slim_pipeline_next(p, x, y, &bi, &err);
    const slim_dataset_info *di = slim_pipeline_dataset(p);
    if (st || bi.end_of_data) {
        if (!st)
            snprintf(err.msg, sizeof err.msg, "no examples");
        slim_pipeline_free(p);
        free(x);
        free(y);
        return fail("data preview", &err);
    }
    int n = bi.n_valid;
    if (cols <= 0)
        for (cols = 1; cols * cols < n; cols++)
            ;
    int rows = (n + cols - 1) / cols, pad = 4, lab = 14;
    int GW = cols * (W + pad) + pad, GH = rows * (H + pad + lab) + pad;
    slim_image g = {.height = GH, .width = GW, .channels = 3};
    g.data = calloc((size_t)GW * GH * 3, 1);
    for (int i = 0; i < n; i++) {
        const float *im = x + (size_t)i * H * W * C;
        float mn = im[0], mx = im[0];
        for (size_t k = 0; k < (size_t)H * W * C; k++)
            mn = im[k] < mn ? im[k] : mn, mx = im[k] > mx ? im[k] : mx;
        float sc = mx > mn ? 255.0f / (mx - mn) : 0;
        int gx = pad + (i % cols) * (W + pad), gy = pad + (i / cols) * (H + pad + lab);
        for (int yy = 0; yy < H; yy++)
            for (int xx = 0; xx < W; xx++)
                for (int c = 0; c < 3; c++) {
                    float v = im[((size_t)yy * W + xx) * C + (C == 3 ? c : 0)];
                    g.data[((size_t)(gy + yy) * GW + gx + xx) * 3 + c] =
                        (uint8_t)((v - mn) * sc + 0.5f);
                }
        draw_number(g.data, GW, GH, gx, gy + H + 3, y[i], 2);
    }
    st = slim_image_write_png(out, &g, &err);
    if (!st) {
        printf("wrote %s: %d samples of %dx%dx%d (%s, %s), values mapped per image to 0..255\n",
               out, n, H, W, C, o.recipe ? o.recipe : di->default_recipe,
               training ? "train" : "eval");
        for (int i = 0; i < n; i++) {
            const char *nm = di->label_names && y[i] >= 0 && y[i] < di->num_classes
                                 ? di->label_names[y[i]]
                                 : NULL;
            printf("  %2d: label %d%s%s\n", i, y[i], nm ? " " : "", nm ? nm : "");
        }
    }
    slim_image_fini(&g);
    slim_pipeline_free(p);
    free(x);
    free(y);
    return st ? fail("data preview", &err) : 0;
}

static int cmd_data(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: slimrun data info FILE... [--verify]\n"
                   "       slimrun data decode IMAGE --out=FILE.png\n"
                   "       slimrun data preview --pipeline=RECIPE DATA... --out=grid.png\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "info"))
        return data_info(argc - 1, argv + 1);
    if (!strcmp(argv[1], "decode"))
        return data_decode(argc - 1, argv + 1);
    if (!strcmp(argv[1], "preview"))
        return data_preview(argc - 1, argv + 1);
    fprintf(stderr, "slimrun data: unknown subcommand '%s' (info, decode, preview)\n", argv[1]);
    return 2;
}

const slim_command slim_cmd_data = {
    "data", "inspect records (info), decode an image, preview a pipeline", cmd_data};
