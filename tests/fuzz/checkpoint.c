/*
 * tests/fuzz/checkpoint.c - any bytes as a slim checkpoint file
 * (model.ckpt-7.slimckpt in a train_dir): verifying it, finding the latest
 * valid checkpoint, restoring it for evaluation or fine-tuning, and resuming
 * from it (parameters, optimizer slots, moving averages, the header).
 *
 * data[0] is the options, the rest the file:
 *   bit 0     make the TFRecord framing's CRCs right (else nearly every
 *             mutation stops at the first CRC)
 *   bit 1     ... and the footer's tensor count and data CRC
 *   bits 2-3  0: verify and latest; 1: restore (exclusions, missing
 *             variables and moving averages from the input); 2: resume; 3: both
 *   bit 4     an older valid checkpoint beside it (latest falls back to it)
 * The graph restored into is small (two fully connected layers, momentum).
 * Properties: restore and resume fail on what verify refuses; latest names
 * the file when it verifies, else the older one; errors say why; after a
 * successful restore, the parameters saved and restored again come back bit
 * for bit (a write-then-read round trip).
 */
#include "runtime/checkpoint.h"
#include "runtime/checkpoint.pb-c.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static slim_registry *reg;
static slim_graph *g;
static slim_program *prog;
static float **ema;
static int np;
static const char *const slot_names[] = {"momentum"};

/* x (2,4) -> fc "net/fc1" (4,3) -> fc "net/head" (3,5); cross entropy. */
static void build(void)
{
    slim_error err = {0};
    if (slim_registry_new(&reg, &err) || slim_graph_new(reg, &g, &err))
        abort();
    slim_tid x, y, w1, b1, w2, b2, h, lg, loss;
    slim_shape xs = {2, {2, 4}}, ys = {1, {2}};
    slim_graph_input(g, "images", SLIM_F32, &xs, &x, &err);
    slim_graph_input(g, "labels", SLIM_I32, &ys, &y, &err);
    slim_init tn = {.kind = SLIM_INIT_TRUNCATED_NORMAL, .stddev = 0.5};
    slim_init z = {.kind = SLIM_INIT_ZEROS};
    slim_graph_param(g, "net/fc1/weights", &(slim_shape){2, {4, 3}}, &tn, NULL, &w1, &err);
    slim_graph_param(g, "net/fc1/biases", &(slim_shape){1, {3}}, &z, NULL, &b1, &err);
    slim_graph_param(g, "net/head/weights", &(slim_shape){2, {3, 5}}, &tn, NULL, &w2, &err);
    slim_graph_param(g, "net/head/biases", &(slim_shape){1, {5}}, &z, NULL, &b2, &err);
    slim_graph_add(g, "fully_connected", "net/fc1", (slim_tid[]){x, w1, b1}, 3, NULL, &h, 1, NULL,
                   &err);
    slim_graph_add(g, "fully_connected", "net/head", (slim_tid[]){h, w2, b2}, 3, NULL, &lg, 1, NULL,
                   &err);
    slim_graph_add(g, "softmax_cross_entropy", "loss", (slim_tid[]){lg, y}, 2, NULL, &loss, 1, NULL,
                   &err);
    slim_graph_set_loss(g, loss, &err);
    slim_graph_init_params(g, 1, &err);
    slim_attrs *a = slim_attrs_new();
    slim_compile_opts co = {
        .training = true, .num_threads = 1, .optimizer = "momentum_update", .optimizer_attrs = a};
    if (slim_graph_compile(g, &co, &prog, &err)) {
        fprintf(stderr, "checkpoint harness: %s\n", err.msg);
        abort();
    }
    slim_attrs_free(a);
    np = slim_graph_param_count(g);
    ema = calloc((size_t)np, sizeof *ema);
    for (int i = 0; i < np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        ema[i] = calloc((size_t)slim_shape_numel(&v.shape), sizeof(float));
    }
}

static slim__rt_ckpt_state state(void)
{
    return (slim__rt_ckpt_state){.g = g,
                                 .p = prog,
                                 .n_slots = 1,
                                 .slot_names = slot_names,
                                 .ema = ema,
                                 .global_step = 5,
                                 .seed = 3,
                                 .model_name = "small",
                                 .optimizer = "momentum",
                                 .run_config = "{}",
                                 .num_classes = 5,
                                 .num_threads = 1,
                                 .batch_size = 2,
                                 .has_pos = true,
                                 .pos = {1, 2, 3}};
}

/* A copy of every parameter's values, in order. */
static float *snapshot(size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        total += (size_t)slim_shape_numel(&v.shape);
    }
    float *s = malloc(total * sizeof *s), *p = s;
    for (int i = 0; i < np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        size_t k = (size_t)slim_shape_numel(&v.shape);
        memcpy(p, v.data, k * sizeof *p);
        p += k;
    }
    *n = total;
    return s;
}

/* Rebuild the file with the footer's count and CRC made to match its tensors. */
static uint8_t *fix_footer(const uint8_t *b, size_t n, size_t *out_n)
{
    enum { MAX = 64 };
    const uint8_t *p[MAX];
    size_t l[MAX];
    int k = 0;
    size_t at = 0;
    while (k < MAX && at + 16 <= n) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | b[at + i];
        if (len > n - at - 16)
            break;
        p[k] = b + at + 12;
        l[k++] = (size_t)len;
        at += 16 + (size_t)len;
    }
    if (k < 2)
        return NULL;
    uint32_t crc = 0;
    for (int i = 1; i < k - 1; i++) {
        Slimckpt__CheckpointTensor *t = slimckpt__checkpoint_tensor__unpack(NULL, l[i], p[i]);
        if (t) {
            if (t->has_data)
                crc = slim_crc32c(crc, t->data.data, t->data.len);
            slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
        }
    }
    Slimckpt__CheckpointFooter f = SLIMCKPT__CHECKPOINT_FOOTER__INIT;
    f.n_tensors = k - 2;
    f.data_crc32c = crc;
    uint8_t fb[64];
    size_t fl = slimckpt__checkpoint_footer__pack(&f, fb);
    p[k - 1] = fb;
    l[k - 1] = fl;
    return fuzz_frame_tfrecord(p, l, k, out_n);
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!g)
        build();
    uint8_t opt = data[0];
    size_t n = size - 1;
    uint8_t *file = malloc(n ? n : 1);
    if (n)
        memcpy(file, data + 1, n);
    if (opt & 3)
        fuzz_fix_tfrecord(file, n);
    if (opt & 2) {
        size_t fn;
        uint8_t *f2 = fix_footer(file, n, &fn);
        if (f2) {
            free(file);
            file = f2;
            n = fn;
        }
    }
    fuzz_clear_tmpdir();
    char dir[512], path[600], older[600];
    fuzz_path("train", dir, sizeof dir);
    mkdir(dir, 0700);
    slim__rt_ckpt_path(dir, 7, path, sizeof path);
    fuzz_write_file(path, file, n);
    free(file);
    slim__rt_ckpt_state s0 = state();
    slim_error err = {0};
    if (opt & 16) {
        slim__rt_ckpt_path(dir, 6, older, sizeof older);
        FUZZ_CHECK(slim__rt_ckpt_save(older, &s0, &err) == SLIM_OK, "%s", err.msg);
    }

    slim_checkpoint_info info;
    slim_status vst = slim_checkpoint_verify(path, &info, &err);
    FUZZ_CHECK(vst == SLIM_OK || err.msg[0], "a failed verify says why");
    char latest[1024], skipped[2048];
    slim_status lst =
        slim_checkpoint_latest(dir, latest, sizeof latest, skipped, sizeof skipped, &err);
    if (vst == SLIM_OK)
        FUZZ_CHECK(lst == SLIM_OK && !strcmp(latest, path), "latest is the file that verifies");
    else if (opt & 16)
        FUZZ_CHECK(lst == SLIM_OK && !strcmp(latest, older) && skipped[0],
                   "latest falls back to the older one and says what it skipped");
    else
        FUZZ_CHECK(lst != SLIM_OK && err.msg[0], "no valid checkpoint: an error");

    int mode = (opt >> 2) & 3;
    fuzz_rng rng = fuzz_rng_from(data, size);
    if (mode & 1) {
        static const char *const scopes[] = {NULL, "net/head", "net/fc1/weights, net/head", ""};
        char report[512] = "";
        slim_restore_opts o = {.exclude_scopes = scopes[fuzz_below(&rng, 4)],
                               .ignore_missing_vars = fuzz_below(&rng, 2),
                               .use_ema = fuzz_below(&rng, 3) - 1,
                               .report = report,
                               .report_size = sizeof report};
        slim_status st = slim_checkpoint_restore(path, g, &o, &info, &err);
        if (vst)
            FUZZ_CHECK(st != SLIM_OK, "restore refuses what verify refuses");
        FUZZ_CHECK(st == SLIM_OK || err.msg[0], "a failed restore says why");
        if (st == SLIM_OK) {
            /* write-then-read: save what was restored, restore it again */
            size_t k;
            float *before = snapshot(&k);
            char again[600];
            slim__rt_ckpt_path(dir, 8, again, sizeof again);
            slim__rt_ckpt_state s = state();
            s.ema = NULL;
            FUZZ_CHECK(slim__rt_ckpt_save(again, &s, &err) == SLIM_OK, "%s", err.msg);
            slim_graph_init_params(g, 2, &err);
            FUZZ_CHECK(slim_checkpoint_restore(again, g, NULL, NULL, &err) == SLIM_OK,
                       "a saved checkpoint restores: %s", err.msg);
            size_t k2;
            float *after = snapshot(&k2);
            FUZZ_CHECK(k == k2 && !memcmp(before, after, k * sizeof *before),
                       "parameters saved and restored come back bit for bit");
            free(before);
            free(after);
        }
    }
    if (mode & 2) {
        slim__rt_ckpt_state r = {
            .g = g, .p = prog, .n_slots = 1, .slot_names = slot_names, .ema = ema};
        slim_status st = slim__rt_ckpt_restore(path, &r, true, NULL, &err);
        if (vst)
            FUZZ_CHECK(st != SLIM_OK, "resume refuses what verify refuses");
        FUZZ_CHECK(st == SLIM_OK || err.msg[0], "a failed resume says why");
    }
    slim_graph_init_params(g, 1, &err);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static void seeds(fuzz_seeds *s)
{
    build();
    char path[600];
    fuzz_path("seed.slimckpt", path, sizeof path);
    for (int variant = 0; variant < 4; variant++) {
        slim__rt_ckpt_state st = state();
        if (variant & 1)
            st.ema = NULL;
        if (variant & 2)
            st.p = NULL, st.has_pos = false;
        slim_error err = {0};
        if (slim__rt_ckpt_save(path, &st, &err))
            abort();
        size_t n;
        uint8_t *b = fuzz_read_file(path, &n);
        for (int opt = 0; opt < 32; opt += 5)
            fuzz_seed_opt(s, (uint8_t)opt, b, n);
        free(b);
    }
}

FUZZ_TARGET(checkpoint, .one = one, .seeds = seeds, .max_len = 8192)
