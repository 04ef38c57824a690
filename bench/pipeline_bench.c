/*
 * bench/pipeline_bench.c - input-pipeline throughput (images/s) for TF-Slim's
 * inception training preprocessing to 224x224 on ImageNet-like JPEGs, from
 * TFRecord shards and from loose files, at 1 and 2 threads, with ROI and DCT
 * scaling on and off; next to the executor alone (no pipeline) and a bare
 * whole-image libjpeg-turbo decode, to show what decoding costs and what the
 * pipeline (reading, shuffling, batching, queue, the copy out) adds.
 *
 * usage: pipeline_bench [--records DIR] [--files DIR] [--threads 1,2] [--reps 3]
 *                       [--batches N] [--modes LIST] [--color] [--uncached] [--size 224]
 *   DIR defaults: /tmp/imn_rec (slimrun convert of the set) and /tmp/imnetlike/train
 *   (../shared/anchors/pipeline/make_imnetlike.py 90).
 * modes: records files records_noroi records_nodct records_view exec exec_noroi exec_nodct decode
 * --eval: the inception recipe's eval section (central crop 87.5%, resize), in order
 * --size: the output size (default 224; smaller sizes let DCT-scaled decoding apply)
 * --fast_decode: decode with dct_method INTEGER_FAST and fancy_upscaling false
 *   (tf.image.decode_jpeg's options; not with --color or --eval)
 *
 * --uncached evicts the input files from the page cache (posix_fadvise) before
 * each pipeline rep: the first pass then reads from disk.
 * The recipe is TF-Slim's inception train preprocessing; by default without
 * the color distortion (crop -> bilinear 224 -> flip -> [-1,1]), which is what
 * the PyTorch anchor (RandomResizedCrop + flip + normalize) and the native
 * anchor (jpeg_pipe_bench pipe_roi) do; --color adds distort_color (fast mode).
 * Each rep: 4 warm-up batches, then --batches batches of 32 timed (default:
 * 3 passes over the 2000 images); the median of the reps is reported with the
 * cores other processes used meanwhile. A short untimed executor run first
 * warms the process up. "records_view", "records_noroi_view", ...: the
 * pipeline handing out batches in place (next_view, as slimrun train binds
 * them) rather than copying them out (next).
 */
#include "bench/benchutil.h"
#include "datasets/prep.h"
#include "core/file.h"
#include <slim/data.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *RECIPE_NOCOLOR = "name: inception_crop_flip\n"
                                    "image_size: 224\n"
                                    "train:\n"
                                    "  - decode: {channels: 3%s}\n"
                                    "  - convert_to_float\n"
                                    "  - distorted_bounding_box_crop: {}\n"
                                    "  - resize: {}\n"
                                    "  - random_flip_left_right\n"
                                    "  - normalize: {subtract: 0.5, multiply: 2.0}\n";

static char recipe_path[256];
static int SZ = 224;     /* --size */
static bool fast_decode; /* --fast_decode */

typedef struct cfg {
    const char *records, *files;
    int reps, batches;
    bool color;
    bool uncached; /* evict the input files from the page cache before each rep */
    bool eval;     /* the recipe's eval section (inception: central crop 87.5%, resize) */
} cfg;

/* posix_fadvise(DONTNEED) on every regular file under dir (one level of
 * subfolders): an uncached read without touching other processes' cache. */
static void evict(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' || (prefix && strncmp(e->d_name, prefix, strlen(prefix))))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        int fd = open(p, O_RDONLY);
        if (fd < 0)
            continue;
        struct stat sb;
        if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            close(fd);
            evict(p, NULL);
            continue;
        }
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
    if (d)
        closedir(d);
}

/* Images per CPU-second of this process in the last timed window: stable
 * when other processes share the machine (wall-clock rates are not). */
static double last_cpu_rate;

static double pipeline_rate(const cfg *c, const char *mode, int threads,
                            slim_pipeline_stats *out_st, double *other)
{
    slim_pipeline_opts o = {0};
    char pat[1024];
    bool view = strstr(mode, "_view") != NULL;
    if (!strncmp(mode, "records", 7)) {
        snprintf(pat, sizeof pat, "%s/train-*", c->records);
    } else {
        snprintf(pat, sizeof pat, "%s", c->files);
    }
    o.file_pattern = pat;
    o.recipe = c->color || c->eval ? "inception" : recipe_path;
    o.is_training = !c->eval;
    o.num_epochs = c->eval ? 1000 : 0;
    o.batch_size = 32;
    o.image_size = SZ;
    o.num_threads = threads;
    o.seed = 1;
    o.no_roi_decode = strstr(mode, "noroi") != NULL;
    o.no_dct_scaling = strstr(mode, "nodct") != NULL;
    if (c->uncached) {
        if (!strncmp(mode, "records", 7))
            evict(c->records, "train-");
        else
            evict(c->files, NULL);
    }
    slim_pipeline *p;
    slim_error err = {0};
    if (slim_pipeline_new(&o, &p, &err)) {
        fprintf(stderr, "pipeline: %s\n", err.msg);
        exit(1);
    }
    float *x = aligned_alloc(64, sizeof(float) * 32 * (size_t)SZ * SZ * 3);
    int32_t y[32];
    slim_batch_info bi;
    for (int b = 0; b < 4; b++) {
        const float *vx;
        const int32_t *vy;
        if (view ? slim_pipeline_next_view(p, &vx, &vy, &bi, &err)
                 : slim_pipeline_next(p, x, y, &bi, &err)) {
            fprintf(stderr, "next: %s\n", err.msg);
            exit(1);
        }
    }
    slim_pipeline_stats s0, s1;
    slim_pipeline_get_stats(p, &s0);
    bench_cpu c0 = bench_cpu_snapshot();
    double t0 = bench_now();
    double sink = 0;
    for (int b = 0; b < c->batches; b++) {
        const float *vx;
        const int32_t *vy;
        if (view) {
            slim_pipeline_next_view(p, &vx, &vy, &bi, &err);
            sink += vx[b];
        } else {
            slim_pipeline_next(p, x, y, &bi, &err);
            sink += x[b];
        }
    }
    double t1 = bench_now();
    bench_cpu c1 = bench_cpu_snapshot();
    slim_pipeline_get_stats(p, &s1);
    for (int k = 0; k < SLIM_STAGE_COUNT; k++) {
        s1.stage_seconds[k] -= s0.stage_seconds[k];
        s1.stage_count[k] -= s0.stage_count[k];
    }
    s1.examples -= s0.examples;
    s1.roi_decodes -= s0.roi_decodes;
    s1.scaled_decodes -= s0.scaled_decodes;
    s1.indexed_decodes -= s0.indexed_decodes;
    s1.wait_seconds -= s0.wait_seconds;
    *out_st = s1;
    *other = bench_other_cores(c0, c1);
    last_cpu_rate = 32.0 * c->batches / (c1.mine - c0.mine);
    slim_pipeline_free(p);
    free(x);
    if (sink == 12345.678)
        printf(" ");
    return 32.0 * c->batches / (t1 - t0);
}

/* ---- the executor alone and a bare decode, over in-memory files ----------- */

typedef struct blob {
    uint8_t *d;
    size_t n;
} blob;

static blob *blobs;
static int nblobs;

static void load_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **cls = NULL;
    int nc = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            cls = realloc(cls, sizeof *cls * (size_t)(nc + 1));
            cls[nc++] = strdup(e->d_name);
        }
    if (d)
        closedir(d);
    for (int c = 0; c < nc; c++) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, cls[c]);
        DIR *dd = opendir(p);
        while (dd && (e = readdir(dd))) {
            if (e->d_name[0] == '.')
                continue;
            char f[4096];
            snprintf(f, sizeof f, "%s/%s", p, e->d_name);
            uint8_t *data;
            size_t n;
            if (slim__file_read(f, NULL, 0, &data, &n, NULL))
                continue;
            blobs = realloc(blobs, sizeof *blobs * (size_t)(nblobs + 1));
            blobs[nblobs].d = data;
            blobs[nblobs].n = n;
            nblobs++;
        }
        if (dd)
            closedir(dd);
        free(cls[c]);
    }
    free(cls);
}

typedef struct targ {
    const cfg *c;
    const char *mode;
    int tid, nt;
    slim__recipe *r;
    pthread_barrier_t *bar;
    double t0, t1;
} targ;

static void *exec_thread(void *a_)
{
    targ *a = a_;
    bool decode = !strcmp(a->mode, "decode");
    slim__prep p;
    slim_error err = {0};
    slim__prep_init(&p, a->r, !a->c->eval, SZ, SZ, 3, strcmp(a->mode, "exec_noroi") != 0,
                    strcmp(a->mode, "exec_nodct") != 0, &err);
    slim__prep_scratch *s = slim__prep_scratch_new();
    float *out = aligned_alloc(64, sizeof(float) * 32 * (size_t)SZ * SZ * 3);
    int total = a->c->batches * 32;
    for (int pass = 0; pass < 2; pass++) { /* warm-up pass of 128, then the timed run */
        int n = pass ? total : 128;
        pthread_barrier_wait(a->bar);
        if (a->tid == 0 && pass)
            a->t0 = bench_now();
        for (int i = a->tid; i < n; i += a->nt) {
            const blob *b = &blobs[i % nblobs];
            if (decode) {
                slim_image img;
                slim_decode_opts o = {.channels = 3};
                if (slim_image_decode(b->d, b->n, &o, &img, &err) == SLIM_OK)
                    slim_image_fini(&img);
            } else {
                prep_input in = {.data = b->d, .len = b->n, .name = "bench"};
                slim__prep_run(&p, s, &in, 1, 0, i, out + (size_t)(i % 32) * SZ * SZ * 3, NULL,
                               &err);
            }
        }
        pthread_barrier_wait(a->bar);
        if (a->tid == 0 && pass)
            a->t1 = bench_now();
    }
    free(out);
    slim__prep_scratch_free(s);
    return NULL;
}

static double exec_rate(const cfg *c, const char *mode, int threads, double *other)
{
    slim__recipe *r;
    slim_error err = {0};
    if (slim__recipe_load(c->color || c->eval ? "inception" : recipe_path, NULL, &r, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    pthread_t th[16];
    targ a[16];
    bench_cpu c0 = bench_cpu_snapshot();
    for (int t = 0; t < threads; t++) {
        a[t] = (targ){c, mode, t, threads, r, &bar, 0, 0};
        pthread_create(&th[t], NULL, exec_thread, &a[t]);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    bench_cpu c1 = bench_cpu_snapshot();
    *other = bench_other_cores(c0, c1);
    last_cpu_rate = (32.0 * c->batches + 128) / (c1.mine - c0.mine); /* incl. the warm-up pass */
    pthread_barrier_destroy(&bar);
    slim__recipe_free(r);
    return 32.0 * c->batches / (a[0].t1 - a[0].t0);
}

int main(int argc, char **argv)
{
    cfg c = {"/tmp/imn_rec", "/tmp/imnetlike/train", 3, 0, false, false, false};
    const char *threads = "1,2";
    const char *modes =
        "records,files,records_noroi,records_nodct,records_view,exec,exec_noroi,decode";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--records") && i + 1 < argc)
            c.records = argv[++i];
        else if (!strcmp(argv[i], "--files") && i + 1 < argc)
            c.files = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            c.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
            c.batches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--modes") && i + 1 < argc)
            modes = argv[++i];
        else if (!strcmp(argv[i], "--color"))
            c.color = true;
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            SZ = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fast_decode"))
            fast_decode = true;
        else if (!strcmp(argv[i], "--eval"))
            c.eval = true;
        else if (!strcmp(argv[i], "--uncached"))
            c.uncached = true;
        else {
            fprintf(stderr,
                    "usage: %s [--records DIR] [--files DIR] [--threads 1,2] [--reps N] "
                    "[--batches N] [--modes LIST] [--color] [--uncached] [--size N] [--eval] "
                    "[--fast_decode]\n",
                    argv[0]);
            return 2;
        }
    }
    snprintf(recipe_path, sizeof recipe_path, "/tmp/slim_bench_recipe_%d.yaml", (int)getpid());
    FILE *f = fopen(recipe_path, "w");
    fprintf(f, RECIPE_NOCOLOR,
            fast_decode ? ", dct_method: INTEGER_FAST, fancy_upscaling: false" : "");
    fclose(f);
    load_files(c.files);
    if (nblobs == 0) {
        fprintf(stderr,
                "no images in %s (make them with ../shared/anchors/pipeline/make_imnetlike.py)\n",
                c.files);
        return 1;
    }
    if (c.batches <= 0)
        c.batches = 3 * nblobs / 32;
    /* Warm-up: the first timed run of a process measured 5-10% slow (page cache and
     * allocator state after loading the files), whichever mode came first. */
    {
        cfg w = c;
        w.batches = 100;
        double other;
        exec_rate(&w, "exec", 1, &other);
    }
    printf(
        "# pipeline_bench: %d images in %s, %d batches of 32 (%dx%d) per rep, %d reps, recipe %s\n",
        nblobs, c.files, c.batches, SZ, SZ, c.reps,
        c.eval    ? "inception eval"
        : c.color ? "inception train (with distort_color)"
                  : "inception train crop+resize+flip");
    char mcopy[512];
    snprintf(mcopy, sizeof mcopy, "%s", modes);
    for (char *save = NULL, *m = strtok_r(mcopy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        char tcopy[64];
        snprintf(tcopy, sizeof tcopy, "%s", threads);
        for (char *s2 = NULL, *t = strtok_r(tcopy, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
            int nt = atoi(t);
            double rates[16], others[16], cpu[16];
            slim_pipeline_stats st = {0};
            for (int r = 0; r < c.reps && r < 16; r++) {
                if (!strncmp(m, "exec", 4) || !strcmp(m, "decode"))
                    rates[r] = exec_rate(&c, m, nt, &others[r]);
                else
                    rates[r] = pipeline_rate(&c, m, nt, &st, &others[r]);
                cpu[r] = last_cpu_rate;
            }
            double cpu_med = bench_median(cpu, c.reps);
            double sorted[16];
            memcpy(sorted, rates, sizeof(double) * (size_t)c.reps);
            double med = bench_median(sorted, c.reps), omax = 0;
            for (int r = 0; r < c.reps; r++)
                omax = others[r] > omax ? others[r] : omax;
            printf("RESULT mode=%s threads=%d img_s=%.0f min=%.0f max=%.0f img_per_cpu_s=%.0f "
                   "other_cores_max=%.2f",
                   m, nt, med, sorted[0], sorted[c.reps - 1], cpu_med, omax);
            if (st.examples > 0) {
                printf(" us_per_img:");
                for (int k = 0; k < SLIM_STAGE_COUNT; k++)
                    if (st.stage_count[k])
                        printf(" %s=%.0f", slim_stage_name((slim_stage)k),
                               1e6 * st.stage_seconds[k] / (double)st.examples);
                printf(" roi=%.2f scaled=%.3f cut=%.2f",
                       (double)st.roi_decodes / (double)st.examples,
                       (double)st.scaled_decodes / (double)st.examples,
                       (double)st.indexed_decodes / (double)st.examples);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    unlink(recipe_path);
    return 0;
}
