/* datasets/convert.c - images, IDX and CIFAR binaries -> TFRecord shards.
 *
 * Folder conversion is planned first (class folders sorted -> labels, files
 * shuffled with the seed, split into shards by count or by bytes), the plan's
 * hash is written to OUT/.slim-convert-SPLIT.plan, then worker threads write
 * whole shards, each to a temporary name, fsynced and renamed, and append
 * "shard I COUNT" to the plan file. Running the same command again skips the
 * shards already there (resume); a different plan is refused unless
 * overwrite. Every image's header is checked (or the whole image decoded). */
#include "datasets/convert.h"
#include "datasets/idx.h"
#include "datasets/jpeg_index.h"
#include "datasets/prep.h"
#include "datasets/listdir.h"
#include "datasets/tfrecord.h"
#include "core/error.h"
#include "core/file.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cfile {
    char *path;
    const char *synset; /* folder name (points into classes) */
    const char *text;
    int64_t size;
    int label;
    const float *boxes; /* --bounding_boxes: nbox x (xmin, ymin, xmax, ymax), consecutive */
    int nbox;
} cfile;

void slim__free_lines(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static bool is_image_name(const char *p)
{
    const char *dot = strrchr(p, '.');
    return dot &&
           (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".png"));
}

/* Lines of a text file (trimmed); NULL on failure. */
char **slim__read_lines(const char *path, int *n)
{
    *n = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char **v = NULL, line[4096];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0])
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            v = realloc(v, (size_t)cap * sizeof *v);
        }
        v[(*n)++] = strdup(line);
    }
    fclose(f);
    return v ? v : calloc(1, sizeof *v); /* an empty file: no lines, not a failure */
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* ---- writing shards -------------------------------------------------------- */

typedef struct job {
    const convert_opts *o;
    const cfile *files;
    const int *bounds; /* shard s: files [bounds[s], bounds[s+1]) */
    int nshards;
    char **names;
    bool *skip_shard;
    const char *plan_path;
    pthread_mutex_t mu;
    int next;
    int done;
    int64_t images_done, images_total, written, skipped;
    bool failed;
    slim_error err;
    char first_skip[1024];
    double last_progress;
} job;

static void progress(job *j, bool force)
{
    double t = slim__now();
    if (j->o->progress && (force || t - j->last_progress > 0.25)) {
        j->last_progress = t;
        j->o->progress(j->done, j->nshards, j->images_done, j->images_total, j->skipped,
                       j->o->progress_user);
    }
}

/* ---- bounding boxes (ImageNet's process_bounding_boxes.py CSV) ------------------------- */

typedef struct csv_box {
    const char *name; /* image file name, points into the line */
    int line;
    float v[4]; /* xmin, ymin, xmax, ymax */
} csv_box;

static int by_name_line(const void *a, const void *b)
{
    const csv_box *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->line - y->line;
}

/* "n01440764_10026.JPEG,0.0010,0.0507,0.9930,0.9877" per box, sorted by name. */
static slim_status read_boxes(const char *path, char **lines, int n, csv_box **out, slim_error *err)
{
    csv_box *bx = calloc((size_t)(n ? n : 1), sizeof *bx);
    if (!bx)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        char *comma = strchr(lines[i], ',');
        int used = 0;
        if (comma) {
            *comma = 0;
            bx[i].name = lines[i];
            bx[i].line = i + 1;
        }
        if (!comma ||
            sscanf(comma + 1, "%f,%f,%f,%f%n", &bx[i].v[0], &bx[i].v[1], &bx[i].v[2], &bx[i].v[3],
                   &used) != 4 ||
            comma[1 + used] != 0) {
            free(bx);
            return slim__data_error(err, SLIM_EPARSE, path,
                                    "%s: line %d: expected 'filename,xmin,ymin,xmax,ymax' "
                                    "(normalized coordinates)",
                                    path, i + 1);
        }
    }
    qsort(bx, (size_t)n, sizeof *bx, by_name_line);
    *out = bx;
    return SLIM_OK;
}

/* f's boxes: the run of entries named as f's file (coords: 4 floats per entry, sorted as bx). */
static void attach_boxes(cfile *f, const csv_box *bx, const float *coords, int n)
{
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    int lo = 0, hi = n;
    while (lo < hi) { /* first entry >= base */
        int mid = (lo + hi) / 2;
        if (strcmp(bx[mid].name, base) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    f->boxes = coords + 4 * lo;
    f->nbox = 0;
    while (lo + f->nbox < n && !strcmp(bx[lo + f->nbox].name, base))
        f->nbox++;
}

static slim_status image_example(const convert_opts *o, const cfile *f, const uint8_t *data,
                                 size_t len, uint8_t **out, size_t *olen, slim_error *err)
{
    int h, w, c;
    slim_status st = slim_image_probe(data, len, f->path, &h, &w, &c, err);
    if (!st && o->verify_decode) {
        slim_image img;
        slim_decode_opts d = {.channels = 3, .name = f->path};
        st = slim_image_decode(data, len, &d, &img, err);
        slim_image_fini(&img);
    }
    if (st)
        return st;
    bool png = slim_image_sniff(data, len) == SLIM_IMAGE_PNG;
    uint8_t *indexed = NULL;
    size_t ilen = 0;
    if (!png && !o->keep_jpeg_bytes &&
        (st = slim__jpeg_add_restarts(data, len, f->path, &indexed, &ilen, err)))
        return st;
    if (indexed) {
        data = indexed;
        len = ilen;
    }
    slim_example *ex;
    if ((st = slim_example_new(&ex, err))) {
        free(indexed);
        return st;
    }
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    int64_t lab = f->label, H = h, W = w, C = 3;
    /* Inception's build_imagenet_data.py schema (a superset of TF-Slim's). */
    slim_example_set_bytes(ex, "image/encoded", data, len);
    slim_example_set_bytes(ex, "image/format", png ? "PNG" : "JPEG", png ? 3 : 4);
    slim_example_set_int64s(ex, "image/class/label", &lab, 1);
    slim_example_set_bytes(ex, "image/class/synset", f->synset, strlen(f->synset));
    slim_example_set_bytes(ex, "image/class/text", f->text, strlen(f->text));
    if (o->bounding_boxes) { /* build_imagenet_data.py's keys, empty lists when none */
        float v[4][64];
        int64_t lv[64];
        int n = f->nbox < 64 ? f->nbox : 64;
        for (int b = 0; b < n; b++) {
            for (int k = 0; k < 4; k++)
                v[k][b] = f->boxes[4 * b + k];
            lv[b] = lab;
        }
        slim_example_set_floats(ex, "image/object/bbox/xmin", v[0], (size_t)n);
        slim_example_set_floats(ex, "image/object/bbox/ymin", v[1], (size_t)n);
        slim_example_set_floats(ex, "image/object/bbox/xmax", v[2], (size_t)n);
        slim_example_set_floats(ex, "image/object/bbox/ymax", v[3], (size_t)n);
        slim_example_set_int64s(ex, "image/object/bbox/label", lv, (size_t)n);
    }
    slim_example_set_int64s(ex, "image/height", &H, 1);
    slim_example_set_int64s(ex, "image/width", &W, 1);
    slim_example_set_int64s(ex, "image/channels", &C, 1);
    slim_example_set_bytes(ex, "image/colorspace", "RGB", 3);
    slim_example_set_bytes(ex, "image/filename", base, strlen(base));
    st = slim_example_serialize(ex, out, olen, err);
    slim_example_free(ex);
    free(indexed);
    return st;
}

slim_status slim__shard_commit(slim_tfrecord_writer *w, slim_status st, const char *tmp,
                               const char *final, slim_error *err)
{
    if (st) {
        slim_tfrecord_writer_free(w);
        unlink(tmp);
        return st;
    }
    if ((st = slim_tfrecord_writer_close(w, err))) {
        unlink(tmp);
        return st;
    }
    if (rename(tmp, final) != 0)
        return slim__data_error(err, SLIM_EIO, final, "%s: rename failed: %s", final,
                                strerror(errno));
    return SLIM_OK;
}

static slim_status write_shard(job *j, int s, slim_error *err)
{
    const convert_opts *o = j->o;
    char final[4096], tmp[4200];
    snprintf(final, sizeof final, "%s/%s", o->output_dir, j->names[s]);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", o->output_dir, j->names[s]);
    slim_tfrecord_writer *w;
    slim_status st = slim_tfrecord_writer_new(tmp, o->compression, &w, err);
    if (st)
        return st;
    int64_t count = 0;
    for (int i = j->bounds[s]; i < j->bounds[s + 1] && !st; i++) {
        pthread_mutex_lock(&j->mu);
        bool stop = j->failed;
        pthread_mutex_unlock(&j->mu);
        if (stop) {
            st = SLIM_ESTATE;
            break;
        }
        const cfile *f = &j->files[i];
        slim_error e = {0};
        uint8_t *buf = NULL;
        size_t len = 0;
        slim_error re = {0};
        slim_status ist = slim__file_read(f->path, "image", 0, &buf, &len, &re);
        if (ist)
            slim__data_error(&e, ist, f->path, "%s", re.msg);
        uint8_t *ex = NULL;
        size_t exlen = 0;
        if (!ist)
            ist = image_example(o, f, buf, len, &ex, &exlen, &e);
        free(buf);
        if (!ist) {
            st = slim_tfrecord_write(w, ex, exlen, err);
            count++;
        }
        free(ex);
        pthread_mutex_lock(&j->mu);
        j->images_done++;
        if (ist) {
            if (o->on_error == SLIM_ON_ERROR_SKIP) {
                if (!j->skipped)
                    snprintf(j->first_skip, sizeof j->first_skip, "%s", e.msg);
                j->skipped++;
                slim__log(SLIM_LOG_WARN, "skipped: %s", e.msg);
            } else {
                st = ist;
                if (err)
                    *err = e;
            }
        }
        progress(j, false);
        pthread_mutex_unlock(&j->mu);
    }
    if ((st = slim__shard_commit(w, st, tmp, final, err)))
        return st;
    pthread_mutex_lock(&j->mu);
    j->written += count;
    FILE *pf = fopen(j->plan_path, "ae");
    if (pf) {
        fprintf(pf, "shard %d %lld\n", s, (long long)count);
        fflush(pf);
        fsync(fileno(pf));
        fclose(pf);
    }
    pthread_mutex_unlock(&j->mu);
    return SLIM_OK;
}

static void *shard_worker(void *arg)
{
    job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int s = -1;
        while (j->next < j->nshards && !j->failed) {
            int c = j->next++;
            if (!j->skip_shard[c]) {
                s = c;
                break;
            }
        }
        pthread_mutex_unlock(&j->mu);
        if (s < 0)
            return NULL;
        slim_error e = {0};
        slim_status st = write_shard(j, s, &e);
        pthread_mutex_lock(&j->mu);
        if (st && !j->failed) {
            j->failed = true;
            j->err = e;
        }
        if (!st)
            j->done++;
        progress(j, false);
        pthread_mutex_unlock(&j->mu);
    }
}

/* Plan, resume check, write the shards of one split. */
static slim_status convert_split(const convert_opts *o, const char *split, const cfile *files,
                                 int nfiles, int num_classes, convert_result *res, slim_error *err)
{
    int nshards;
    int *bounds;
    if (o->shards > 0) {
        nshards = o->shards < nfiles ? o->shards : (nfiles ? nfiles : 1);
        bounds = malloc(sizeof *bounds * (size_t)(nshards + 1));
        for (int s = 0; s <= nshards; s++)
            bounds[s] = (int)((int64_t)s * nfiles / nshards);
    } else {
        int64_t limit = o->size_per_record > 0 ? o->size_per_record : 50ll << 20;
        bounds = malloc(sizeof *bounds * (size_t)(nfiles + 2));
        nshards = 0;
        bounds[0] = 0;
        int64_t acc = 0;
        for (int i = 0; i < nfiles; i++) {
            acc += files[i].size + 300; /* + Example overhead */
            if (acc >= limit && i + 1 < nfiles) {
                bounds[++nshards] = i + 1;
                acc = 0;
            }
        }
        bounds[++nshards] = nfiles;
    }
    char **names = calloc((size_t)nshards, sizeof *names);
    bool *skip = calloc((size_t)nshards, sizeof *skip);
    for (int s = 0; s < nshards; s++) {
        char b[512];
        if (o->dataset_name)
            snprintf(b, sizeof b, "%s_%s_%05d-of-%05d.tfrecord", o->dataset_name, split, s,
                     nshards);
        else
            snprintf(b, sizeof b, "%s-%05d-of-%05d", split, s, nshards);
        names[s] = strdup(b);
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < nfiles; i++) {
        h = fnv(h, files[i].path, strlen(files[i].path) + 1);
        h = fnv(h, &files[i].size, sizeof files[i].size);
        h = fnv(h, &files[i].label, sizeof files[i].label);
        h = fnv(h, files[i].boxes, sizeof(float) * 4 * (size_t)files[i].nbox);
    }
    h = fnv(h, &nshards, sizeof nshards);
    h = fnv(h, split, strlen(split));
    h = fnv(h, &o->compression, sizeof o->compression);
    h = fnv(h, &o->keep_jpeg_bytes, sizeof o->keep_jpeg_bytes);
    char plan[4096], line[256];
    snprintf(plan, sizeof plan, "%s/.slim-convert-%s.plan", o->output_dir, split);
    slim_status st = SLIM_OK;
    int64_t resumed_images = 0;
    int resumed = 0;
    FILE *pf = fopen(plan, "re");
    if (pf) {
        unsigned long long old = 0;
        bool same =
            fgets(line, sizeof line, pf) && sscanf(line, "hash %llx", &old) == 1 && old == h;
        if (!same && !o->overwrite) {
            fclose(pf);
            st = slim__error(err, SLIM_EEXIST,
                             "%s: holds a %s split converted from other input or settings; use "
                             "--overwrite to replace it",
                             o->output_dir, split);
            goto out;
        }
        while (same && fgets(line, sizeof line, pf)) {
            int s;
            long long c;
            if (sscanf(line, "shard %d %lld", &s, &c) == 2 && s >= 0 && s < nshards && !skip[s]) {
                char p2[4096];
                snprintf(p2, sizeof p2, "%s/%s", o->output_dir, names[s]);
                if (access(p2, R_OK) == 0) {
                    skip[s] = true;
                    resumed++;
                    resumed_images += c;
                }
            }
        }
        fclose(pf);
        if (!same)
            unlink(plan);
    }
    if (!resumed) {
        pf = fopen(plan, "we");
        if (!pf) {
            st = slim__data_error(err, SLIM_EIO, plan, "%s: cannot create: %s", plan,
                                  strerror(errno));
            goto out;
        }
        fprintf(pf, "hash %016llx\n", (unsigned long long)h);
        fflush(pf);
        fsync(fileno(pf));
        fclose(pf);
    }
    job j = {.o = o,
             .files = files,
             .bounds = bounds,
             .nshards = nshards,
             .names = names,
             .skip_shard = skip,
             .plan_path = plan,
             .images_total = nfiles};
    for (int s = 0; s < nshards; s++)
        if (skip[s]) {
            j.images_done += bounds[s + 1] - bounds[s];
            j.done++;
        }
    pthread_mutex_init(&j.mu, NULL);
    int nt = o->num_threads > 0 ? o->num_threads : 1;
    if (nt > nshards)
        nt = nshards;
    if (nt < 1)
        nt = 1;
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    for (int t = 0; t < nt; t++)
        pthread_create(&th[t], NULL, shard_worker, &j);
    for (int t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
    free(th);
    pthread_mutex_destroy(&j.mu);
    progress(&j, true);
    res->images += j.written + resumed_images;
    res->skipped += j.skipped;
    res->shards += nshards;
    res->shards_resumed += resumed;
    res->num_classes = num_classes;
    if (j.skipped && !res->first_skip[0])
        snprintf(res->first_skip, sizeof res->first_skip, "%s", j.first_skip);
    if (j.failed) {
        st = j.err.code ? j.err.code : SLIM_EINTERNAL;
        if (err)
            *err = j.err;
        goto out;
    }
    /* The split's summary for dataset.yaml. */
    pf = fopen(plan, "ae");
    if (pf) {
        fprintf(pf, "done %lld %d %s\n", (long long)(j.written + resumed_images), num_classes,
                o->dataset_name ? o->dataset_name : "");
        fclose(pf);
    }
out:
    for (int s = 0; s < nshards; s++)
        free(names[s]);
    free(names);
    free(skip);
    free(bounds);
    return st;
}

/* dataset.yaml from the plan files of every split converted into output_dir. */
static slim_status write_dataset_yaml(const convert_opts *o, int num_classes, slim_error *err)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/dataset.yaml", o->output_dir);
    snprintf(tmp, sizeof tmp, "%s/.dataset.yaml.tmp", o->output_dir);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return slim__data_error(err, SLIM_EIO, tmp, "%s: cannot create: %s", tmp, strerror(errno));
    fprintf(f, "# written by slimrun convert\nname: %s\nnum_classes: %d\n%ssplits:\n",
            o->dataset_name ? o->dataset_name : "folder", num_classes,
            o->synsets ? "labels_offset: 1   # label 0 is background (TF-Slim ImageNet)\n" : "");
    /* The plans are dot files (slim__list_dir skips those). */
    DIR *d = opendir(o->output_dir);
    struct dirent *e;
    char *splits[64];
    int ns = 0;
    while (d && (e = readdir(d)) && ns < 64) {
        char split[256];
        if (sscanf(e->d_name, ".slim-convert-%255[^.].plan", split) == 1)
            splits[ns++] = strdup(split);
    }
    if (d)
        closedir(d);
    qsort(splits, (size_t)ns, sizeof *splits, slim__cmp_str);
    for (int i = 0; i < ns; i++) {
        char plan[4096], line[512];
        snprintf(plan, sizeof plan, "%s/.slim-convert-%s.plan", o->output_dir, splits[i]);
        FILE *pf = fopen(plan, "re");
        long long size = -1;
        char name[256] = "";
        int nc;
        while (pf && fgets(line, sizeof line, pf)) {
            long long s;
            name[0] = 0;
            if (sscanf(line, "done %lld %d %255s", &s, &nc, name) >= 2)
                size = s;
        }
        if (pf)
            fclose(pf);
        if (size >= 0) {
            if (name[0])
                fprintf(f, "  %s: {pattern: \"%s_%s_*.tfrecord\", size: %lld}\n", splits[i], name,
                        splits[i], size);
            else
                fprintf(f, "  %s: {pattern: \"%s-*\", size: %lld}\n", splits[i], splits[i], size);
        }
        free(splits[i]);
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return slim__data_error(err, SLIM_EIO, path, "%s: cannot write", path);
    return SLIM_OK;
}

slim_status slim__write_labels(const char *dir, const char *const *names, int n, int first,
                               slim_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/labels.txt", dir);
    FILE *f = fopen(path, "we");
    if (!f)
        return slim__data_error(err, SLIM_EIO, path, "%s: cannot create: %s", path,
                                strerror(errno));
    for (int i = 0; i < n; i++)
        fprintf(f, "%d:%s\n", i + first, names[i]);
    if (fclose(f) != 0)
        return slim__data_error(err, SLIM_EIO, path, "%s: write failed", path);
    return SLIM_OK;
}

slim_status slim__convert_folder(const convert_opts *o, convert_result *res, slim_error *err)
{
    memset(res, 0, sizeof *res);
    if (!o->input_dir || !o->output_dir)
        return slim__error(err, SLIM_EINVAL, "convert needs --input_dir and --dataset_dir");
    if (mkdir(o->output_dir, 0755) != 0 && errno != EEXIST)
        return slim__data_error(err, SLIM_EIO, o->output_dir, "%s: cannot create: %s",
                                o->output_dir, strerror(errno));
    int nent;
    char **ent = slim__list_dir(o->input_dir, &nent);
    if (!ent && nent == 0) {
        DIR *dd = opendir(o->input_dir);
        if (!dd)
            return slim__data_error(err, SLIM_ENOTFOUND, o->input_dir, "%s: cannot open: %s",
                                    o->input_dir, strerror(errno));
        closedir(dd);
    }
    char **syn = NULL, **meta = NULL, **imglab = NULL, **bblines = NULL;
    int nsyn = 0, nmeta = 0, nimglab = 0, nbb = 0;
    csv_box *bx = NULL;
    float *bbstore = NULL;
    slim_status st = SLIM_OK;
    cfile *files = NULL;
    int nfiles = 0, cap = 0;
    char **classes = NULL;
    int ncls = 0;
    if (o->synsets && !(syn = slim__read_lines(o->synsets, &nsyn))) {
        st = slim__data_error(err, SLIM_ENOTFOUND, o->synsets, "%s: cannot read", o->synsets);
        goto done;
    }
    if (o->metadata && !(meta = slim__read_lines(o->metadata, &nmeta))) {
        st = slim__data_error(err, SLIM_ENOTFOUND, o->metadata, "%s: cannot read", o->metadata);
        goto done;
    }
    if (o->bounding_boxes) {
        if (!(bblines = slim__read_lines(o->bounding_boxes, &nbb))) {
            st = slim__data_error(err, SLIM_ENOTFOUND, o->bounding_boxes, "%s: cannot read",
                                  o->bounding_boxes);
            goto done;
        }
        if ((st = read_boxes(o->bounding_boxes, bblines, nbb, &bx, err)))
            goto done;
        if (!(bbstore = malloc(sizeof(float) * 4 * (size_t)(nbb ? nbb : 1)))) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            goto done;
        }
        for (int i = 0; i < nbb; i++)
            memcpy(bbstore + 4 * i, bx[i].v, sizeof bx[i].v);
    }
    if (o->image_labels && !(imglab = slim__read_lines(o->image_labels, &nimglab))) {
        st = slim__data_error(err, SLIM_ENOTFOUND, o->image_labels, "%s: cannot read",
                              o->image_labels);
        goto done;
    }
    /* Class folders, or a flat folder of images. */
    for (int i = 0; i < nent; i++) {
        char p[4096];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", o->input_dir, ent[i]);
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            classes = realloc(classes, sizeof *classes * (size_t)(ncls + 1));
            classes[ncls++] = strdup(ent[i]);
        }
    }
    bool flat = ncls == 0;
    if (flat) {
        classes = calloc(1, sizeof *classes);
        classes[0] = strdup("");
        ncls = 1;
    }
    int flat_index = 0;
    for (int c = 0; c < ncls && !st; c++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s%s%s", o->input_dir, flat ? "" : "/", classes[c]);
        int nf;
        char **fl = slim__list_dir(dir, &nf);
        int label = c;
        const char *synset = classes[c];
        if (!flat && syn) {
            label = -1;
            for (int k = 0; k < nsyn; k++)
                if (!strcmp(syn[k], classes[c]))
                    label = k + 1;
            if (label < 0) {
                st = slim__error(err, SLIM_EINVAL, "%s: folder '%s' is not in the synset list %s",
                                 o->input_dir, classes[c], o->synsets);
                slim__free_lines(fl, nf);
                break;
            }
        }
        for (int k = 0; k < nf && !st; k++) {
            char p[8200];
            snprintf(p, sizeof p, "%s/%s", dir, fl[k]);
            if (!is_image_name(p))
                continue;
            struct stat sb;
            if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
                continue;
            if (nfiles == cap) {
                cap = cap ? 2 * cap : 1024;
                files = realloc(files, sizeof *files * (size_t)cap);
            }
            cfile *f = &files[nfiles++];
            f->path = strdup(p);
            f->size = sb.st_size;
            f->label = label;
            f->synset = synset;
            f->boxes = NULL;
            f->nbox = 0;
            if (bx)
                attach_boxes(f, bx, bbstore, nbb);
            if (flat) {
                if (imglab) {
                    if (flat_index >= nimglab) {
                        st = slim__error(err, SLIM_EINVAL,
                                         "%s has %d lines, fewer than the images in %s",
                                         o->image_labels, nimglab, o->input_dir);
                        break;
                    }
                    f->synset = imglab[flat_index];
                    f->label = -1;
                    for (int s = 0; syn && s < nsyn; s++)
                        if (!strcmp(syn[s], imglab[flat_index]))
                            f->label = s + 1;
                    if (f->label < 0) {
                        st = slim__error(err, SLIM_EINVAL, "%s: line %d: synset '%s' is not in %s",
                                         o->image_labels, flat_index + 1, imglab[flat_index],
                                         o->synsets ? o->synsets : "(no --synsets given)");
                        break;
                    }
                }
                flat_index++;
            }
            f->text = f->synset;
            for (int m = 0; meta && m < nmeta; m++) {
                size_t l = strlen(f->synset);
                if (!strncmp(meta[m], f->synset, l) && meta[m][l] == '\t') {
                    f->text = meta[m] + l + 1;
                    break;
                }
            }
        }
        slim__free_lines(fl, nf);
    }
    if (!st && nfiles == 0)
        st = slim__error(err, SLIM_ENOTFOUND,
                         "%s: no .jpg/.jpeg/.png images found (in class folders)", o->input_dir);
    if (!st && flat && !imglab && o->synsets)
        st = slim__error(err, SLIM_EINVAL, "%s has no class folders: give --image_labels",
                         o->input_dir);
    if (st)
        goto done;
    /* Shuffle (TF-Slim's converters shuffle with a fixed seed). */
    if (!o->no_shuffle)
        for (int i = nfiles - 1; i > 0; i--) {
            int k = (int)(slim_rand_u64(o->seed, 0xC0417ull, (uint64_t)i) % (uint64_t)(i + 1));
            cfile t = files[i];
            files[i] = files[k];
            files[k] = t;
        }
    int num_classes = syn ? nsyn + 1 : (flat ? 1 : ncls);
    const char *split = o->split ? o->split : "train";
    int nval = o->validation_size > 0 ? o->validation_size : 0;
    if (nval >= nfiles) {
        st = slim__error(err, SLIM_EINVAL, "--validation_size %d leaves no training images (of %d)",
                         nval, nfiles);
        goto done;
    }
    if (nval) {
        /* TF-Slim flowers: the first N shuffled images are the validation split. */
        st = convert_split(o, "validation", files, nval, num_classes, res, err);
        if (!st)
            st = convert_split(o, split, files + nval, nfiles - nval, num_classes, res, err);
    } else {
        st = convert_split(o, split, files, nfiles, num_classes, res, err);
    }
    if (!st) {
        if (syn) {
            const char **names = calloc((size_t)nsyn + 1, sizeof *names);
            names[0] = "background";
            for (int k = 0; k < nsyn; k++) {
                names[k + 1] = syn[k];
                for (int m = 0; meta && m < nmeta; m++) {
                    size_t l = strlen(syn[k]);
                    if (!strncmp(meta[m], syn[k], l) && meta[m][l] == '\t') {
                        names[k + 1] = meta[m] + l + 1;
                        break;
                    }
                }
            }
            st = slim__write_labels(o->output_dir, names, nsyn + 1, 0, err);
            free(names);
        } else if (!flat) {
            st = slim__write_labels(o->output_dir, (const char *const *)classes, ncls, 0, err);
        }
    }
    if (!st)
        st = write_dataset_yaml(o, num_classes, err);
done:
    for (int i = 0; i < nfiles; i++)
        free(files[i].path);
    free(files);
    slim__free_lines(classes, ncls);
    slim__free_lines(ent, nent);
    slim__free_lines(syn, nsyn);
    slim__free_lines(meta, nmeta);
    slim__free_lines(imglab, nimglab);
    slim__free_lines(bblines, nbb);
    free(bx);
    free(bbstore);
    return st;
}
