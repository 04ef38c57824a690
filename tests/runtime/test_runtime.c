/* tests/runtime/test_runtime.c - learning-rate schedules against TF's
 * formulas, the optimizer table, TensorBoard event files read back,
 * checkpoints through the C API (round trip, moving averages, exclusions,
 * missing parameters, damaged files, pruning). TAP output. */
#include "core/error.h"
#include "runtime/checkpoint.h"
#include "runtime/checkpoint.pb-c.h"
#include "runtime/report.h"
#include "runtime/schedule.h"
#include "runtime/tfevent.pb-c.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int n_checks, n_failed;

static void ok(bool cond, const char *fmt, ...) SLIM_PRINTF(2, 3);
static void ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++n_checks);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    n_failed += !cond;
}

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-9 + 1e-7 * fabs(b);
}

/* ---- schedules ---------------------------------------------------------------- */

static void test_schedules(void)
{
    slim_train_config c;
    slim_train_config_init(&c);
    c.learning_rate = 0.1;
    c.batch_size = 100;
    c.learning_rate_decay_factor = 0.5;
    c.num_epochs_per_decay = 2; /* 1000 examples: decay_steps = 20 */
    c.end_learning_rate = 0.001;
    slim__rt_lr_schedule s;
    slim_error err = {0};

    c.learning_rate_decay_type = "exponential";
    ok(slim__rt_lr_schedule_init(&s, &c, 1000, 0, &err) == SLIM_OK && s.decay_steps == 20,
       "exponential: decay_steps = int(1000 * 2 / 100) = 20");
    ok(near(slim__rt_lr_at(&s, 0), 0.1) && near(slim__rt_lr_at(&s, 19), 0.1) &&
           near(slim__rt_lr_at(&s, 20), 0.05) && near(slim__rt_lr_at(&s, 45), 0.025),
       "exponential staircase: 0.1 until step 19, 0.05 at 20, 0.025 at 45");
    c.staircase = false;
    slim__rt_lr_schedule_init(&s, &c, 1000, 0, &err);
    ok(near(slim__rt_lr_at(&s, 10), 0.1 * sqrt(0.5)), "exponential smooth: 0.1 * 0.5^(10/20)");
    c.staircase = true;

    c.learning_rate_decay_type = "polynomial";
    slim__rt_lr_schedule_init(&s, &c, 1000, 0, &err);
    ok(near(slim__rt_lr_at(&s, 10), 0.0505) && near(slim__rt_lr_at(&s, 30), 0.001),
       "polynomial: (0.1 - 0.001)(1 - 10/20) + 0.001 = 0.0505; 0.001 after 20 steps");

    c.learning_rate_decay_type = "cosine";
    c.end_learning_rate = 0;
    ok(slim__rt_lr_schedule_init(&s, &c, 1000, 0, &err) == SLIM_EINVAL,
       "cosine without a run length is an error: %s", err.msg);
    slim__rt_lr_schedule_init(&s, &c, 1000, 100, &err);
    ok(near(slim__rt_lr_at(&s, 50), 0.05) &&
           near(slim__rt_lr_at(&s, 25), 0.1 * 0.5 * (1 + cos(M_PI / 4))) &&
           near(slim__rt_lr_at(&s, 100), 0),
       "cosine over 100 steps: 0.05 at 50, 0.0854 at 25, 0 at the end");

    c.learning_rate_decay_type = "fixed";
    c.warmup_epochs = 1; /* 10 steps */
    slim__rt_lr_schedule_init(&s, &c, 1000, 0, &err);
    ok(near(slim__rt_lr_at(&s, 0), 0.01) && near(slim__rt_lr_at(&s, 4), 0.05) &&
           near(slim__rt_lr_at(&s, 9), 0.1) && near(slim__rt_lr_at(&s, 500), 0.1),
       "linear warm-up over 10 steps: 0.01, 0.05 at step 4, 0.1 from step 9");
    c.warmup_epochs = 0;

    c.learning_rate_decay_type = "linear";
    ok(slim__rt_lr_schedule_init(&s, &c, 1000, 0, &err) == SLIM_EINVAL &&
           strstr(err.msg, "fixed, exponential, polynomial or cosine"),
       "an unknown decay type lists the known ones");
}

/* ---- optimizers ------------------------------------------------------------------- */

static void test_optimizers(void)
{
    static const struct {
        const char *name, *op;
        int slots;
        const char *slot0;
    } want[] = {
        {"sgd", "sgd_update", 0, NULL},
        {"momentum", "momentum_update", 1, "momentum"},
        {"rmsprop", "rmsprop_update", 2, "rms"},
        {"adam", "adam_update", 2, "m"},
        {"adagrad", "adagrad_update", 1, "accumulator"},
        {"adadelta", "adadelta_update", 2, "accum"},
        {"ftrl", "ftrl_update", 2, "accum"},
    };
    slim_train_config c;
    slim_train_config_init(&c);
    slim_registry *reg;
    slim_error err = {0};
    slim_registry_new(&reg, &err);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        c.optimizer = want[i].name;
        slim__rt_optimizer o;
        slim_status st = slim__rt_optimizer_init(&o, &c, reg, &err);
        ok(st == SLIM_OK && !strcmp(o.op, want[i].op) && o.n_slots == want[i].slots &&
               (!want[i].slot0 || !strcmp(o.slot_names[0], want[i].slot0)) &&
               slim_registry_find(reg, o.op)->min_inputs == 2 + o.n_slots,
           "--optimizer=%s: %s with %d slot(s), the first named %s", want[i].name, want[i].op,
           want[i].slots, want[i].slot0 ? want[i].slot0 : "-");
        if (st == SLIM_OK)
            slim__rt_optimizer_fini(&o);
    }
    c.optimizer = "lamb";
    slim__rt_optimizer o;
    ok(slim__rt_optimizer_init(&o, &c, reg, &err) == SLIM_EINVAL && strstr(err.msg, "rmsprop"),
       "an unknown optimizer lists the known ones");
    slim_registry_free(reg);
}

/* ---- TensorBoard event files --------------------------------------------------------- */

static void test_events(const char *dir)
{
    slim__rt_events *e = slim__rt_events_new(dir);
    slim_error err = {0};
    const char *tags[] = {"losses/total_loss", "learning_rate"};
    double v1[] = {2.5, 0.01}, v2[] = {1.25, 0.005};
    bool opened = e && slim__rt_events_scalars(e, 10, tags, v1, 2, &err) == SLIM_OK;
    ok(opened, "event file created at the first write%s%s", opened ? "" : ": ", err.msg);
    if (!opened) {
        slim__rt_events_close(e);
        return;
    }
    char path[1300];
    snprintf(path, sizeof path, "%s", slim__rt_events_path(e));
    slim__rt_events_scalars(e, 20, tags, v2, 2, NULL);
    slim__rt_events_close(e);
    ok(strstr(path, "/events.out.tfevents.") != NULL, "named events.out.tfevents.TIME.HOST");
    slim_tfrecord_reader *r;
    if (slim_tfrecord_open(path, SLIM_COMPRESSION_NONE, true, &r, &err)) {
        ok(false, "event file reads as TFRecords: %s", err.msg);
        return;
    }
    const uint8_t *d;
    size_t len;
    int64_t off;
    int i = 0;
    bool version = false, values = true;
    while (slim_tfrecord_next(r, &d, &len, &off, &err) == SLIM_OK && d) {
        Slimtb__Event *ev = slimtb__event__unpack(NULL, len, d);
        if (!ev) {
            values = false;
            break;
        }
        if (i == 0)
            version = ev->file_version && !strcmp(ev->file_version, "brain.Event:2");
        else {
            const double *want = i == 1 ? v1 : v2;
            values = values && ev->step == (i == 1 ? 10 : 20) && ev->summary &&
                     ev->summary->n_value == 2 &&
                     !strcmp(ev->summary->value[0]->tag, "losses/total_loss") &&
                     ev->summary->value[0]->simple_value == (float)want[0] &&
                     ev->summary->value[1]->simple_value == (float)want[1] && ev->wall_time > 1e9;
        }
        slimtb__event__free_unpacked(ev, NULL);
        i++;
    }
    slim_tfrecord_close(r);
    ok(version, "the first event is file_version brain.Event:2");
    ok(values && i == 3, "scalar summaries read back with their steps and tags (%d events)", i);
}

/* ---- checkpoints ------------------------------------------------------------------------ */

/* x (N,4) -> fc "net/fc1" (4,3) -> fc "net/head" (3,K); loss = cross entropy */
static slim_graph *small_graph(slim_registry *reg, int classes)
{
    slim_graph *g;
    slim_error err = {0};
    slim_graph_new(reg, &g, &err);
    slim_tid x, y, w1, b1, w2, b2, h, lg, loss;
    slim_shape xs = {2, {2, 4}}, ys = {1, {2}};
    slim_graph_input(g, "images", SLIM_F32, &xs, &x, &err);
    slim_graph_input(g, "labels", SLIM_I32, &ys, &y, &err);
    slim_init tn = {.kind = SLIM_INIT_TRUNCATED_NORMAL, .stddev = 0.5};
    slim_init z = {.kind = SLIM_INIT_ZEROS};
    slim_graph_param(g, "net/fc1/weights", &(slim_shape){2, {4, 3}}, &tn, NULL, &w1, &err);
    slim_graph_param(g, "net/fc1/biases", &(slim_shape){1, {3}}, &z, NULL, &b1, &err);
    slim_graph_param(g, "net/head/weights", &(slim_shape){2, {3, classes}}, &tn, NULL, &w2, &err);
    slim_graph_param(g, "net/head/biases", &(slim_shape){1, {classes}}, &z, NULL, &b2, &err);
    slim_graph_add(g, "fully_connected", "net/fc1", (slim_tid[]){x, w1, b1}, 3, NULL, &h, 1, NULL,
                   &err);
    slim_graph_add(g, "fully_connected", "net/head", (slim_tid[]){h, w2, b2}, 3, NULL, &lg, 1, NULL,
                   &err);
    slim_graph_add(g, "softmax_cross_entropy", "loss", (slim_tid[]){lg, y}, 2, NULL, &loss, 1, NULL,
                   &err);
    slim_graph_set_loss(g, loss, &err);
    return g;
}

static float *param(slim_graph *g, const char *name)
{
    slim_tensor v;
    slim_graph_param_get(g, name, &v, NULL);
    return v.data;
}

static void test_checkpoints(const char *dir)
{
    slim_registry *reg;
    slim_error err = {0};
    slim_registry_new(&reg, &err);
    slim_graph *g = small_graph(reg, 5);
    slim_graph_init_params(g, 1, &err);
    slim_attrs *a = slim_attrs_new();
    slim_program *p;
    slim_compile_opts co = {
        .training = true, .num_threads = 1, .optimizer = "momentum_update", .optimizer_attrs = a};
    slim_graph_compile(g, &co, &p, &err);
    slim_tensor slot;
    slim_program_slot(p, "net/fc1/weights", 0, &slot, &err);
    for (int i = 0; i < 12; i++)
        ((float *)slot.data)[i] = (float)i * 0.25f;
    /* moving averages: value + 1 */
    int np = slim_graph_param_count(g);
    float **ema = calloc((size_t)np, sizeof *ema);
    for (int i = 0; i < np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        int64_t n = slim_shape_numel(&v.shape);
        ema[i] = malloc((size_t)n * sizeof(float));
        for (int64_t j = 0; j < n; j++)
            ema[i][j] = ((float *)v.data)[j] + 1;
    }
    static const char *const slot_names[] = {"momentum"};
    slim__rt_ckpt_state s = {.g = g,
                             .p = p,
                             .n_slots = 1,
                             .slot_names = slot_names,
                             .ema = ema,
                             .global_step = 123,
                             .seed = 9,
                             .model_name = "small",
                             .optimizer = "momentum_update",
                             .num_classes = 5,
                             .num_threads = 1,
                             .batch_size = 2,
                             .has_pos = true,
                             .pos = {3, 17, 2017}};
    char path[1200];
    slim__rt_ckpt_path(dir, 123, path, sizeof path);
    ok(slim__rt_ckpt_save(path, &s, &err) == SLIM_OK, "save %s", path);
    float w0 = param(g, "net/fc1/weights")[5];

    /* resume into fresh state */
    slim_graph_init_params(g, 2, &err);
    memset(slot.data, 0, 12 * sizeof(float));
    float *ema2 = calloc(12, sizeof(float));
    float *keep = ema[0];
    ema[0] = ema2;
    slim__rt_ckpt_state r = {.g = g, .p = p, .n_slots = 1, .slot_names = slot_names, .ema = ema};
    slim_status st = slim__rt_ckpt_restore(path, &r, true, NULL, &err);
    ok(st == SLIM_OK && param(g, "net/fc1/weights")[5] == w0 && ((float *)slot.data)[11] == 2.75f &&
           ema2[5] == w0 + 1 && r.global_step == 123 && r.seed == 9 && r.pos.epoch == 3 &&
           r.pos.index == 17 && r.pos.consumed == 2017,
       "resume restores parameters, slots, averages, step, seed, input position%s%s",
       st ? ": " : "", st ? err.msg : "");
    ema[0] = keep;
    free(ema2);

    /* evaluation: the averages replace the values (auto), or not */
    slim_checkpoint_info info;
    slim_graph_init_params(g, 2, &err);
    st = slim_checkpoint_restore(dir, g, &(slim_restore_opts){.use_ema = -1}, &info, &err);
    ok(st == SLIM_OK && param(g, "net/fc1/weights")[5] == w0 + 1 && info.has_ema,
       "restoring a directory takes its newest checkpoint, with the moving averages");
    st = slim_checkpoint_restore(path, g, &(slim_restore_opts){.use_ema = 0}, NULL, &err);
    ok(st == SLIM_OK && param(g, "net/fc1/weights")[5] == w0, "use_ema 0 takes the values");

    /* another head */
    slim_graph *g3 = small_graph(reg, 3);
    slim_graph_init_params(g3, 5, &err);
    st = slim_checkpoint_restore(path, g3, NULL, NULL, &err);
    ok(st == SLIM_ESHAPE &&
           strstr(err.msg, "'net/head/weights' is (3,5) in the checkpoint but (3,3)") &&
           strstr(err.msg, "--checkpoint_exclude_scopes=net/head"),
       "a head of another size is named with the flag to exclude it: %s", err.msg);
    float head0 = param(g3, "net/head/weights")[0];
    char rep[512] = "";
    st = slim_checkpoint_restore(
        path, g3,
        &(slim_restore_opts){
            .exclude_scopes = "net/head", .use_ema = 0, .report = rep, .report_size = sizeof rep},
        NULL, &err);
    ok(st == SLIM_OK && param(g3, "net/fc1/weights")[5] == w0 &&
           param(g3, "net/head/weights")[0] == head0 && strstr(rep, "excluded net/head/weights"),
       "excluded, the head keeps its initial values and is reported");

    /* a parameter the checkpoint lacks */
    slim_graph *g4 = small_graph(reg, 5);
    slim_tid extra;
    slim_graph_param(g4, "net/extra", &(slim_shape){1, {2}}, NULL, NULL, &extra, &err);
    slim_graph_init_params(g4, 5, &err);
    st = slim_checkpoint_restore(path, g4, &(slim_restore_opts){.use_ema = 0}, NULL, &err);
    ok(st == SLIM_ENOTFOUND && strstr(err.msg, "'net/extra' (a parameter of the model") &&
           !strstr(err.msg, "--ignore_missing_vars"),
       "a missing parameter is an error naming it, without train's flag: %s", err.msg);
    st = slim_checkpoint_restore(
        path, g4, &(slim_restore_opts){.use_ema = 0, .ignore_missing_vars = true}, NULL, &err);
    ok(st == SLIM_OK, "... unless --ignore_missing_vars");

    /* damage, and the newest valid one */
    slim__rt_ckpt_state s2 = s;
    s2.global_step = 200;
    char p2[1200];
    slim__rt_ckpt_path(dir, 200, p2, sizeof p2);
    slim__rt_ckpt_save(p2, &s2, &err);
    FILE *f = fopen(p2, "r+b");
    fseek(f, 300, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 300, SEEK_SET);
    fputc(ch ^ 0x10, f);
    fclose(f);
    char latest[1200], skipped[1024];
    st = slim_checkpoint_latest(dir, latest, sizeof latest, skipped, sizeof skipped, &err);
    ok(st == SLIM_OK && !strcmp(latest, path) && strstr(skipped, "model.ckpt-200"),
       "a damaged newest checkpoint is skipped and reported: %s", skipped);
    slim_graph_init_params(g, 3, &err);
    float before = param(g, "net/fc1/weights")[0];
    ok(slim_checkpoint_restore(p2, g, NULL, NULL, &err) == SLIM_ECORRUPT,
       "restoring it directly fails: %s", err.msg);
    ok(param(g, "net/fc1/weights")[0] == before, "and changes nothing");

    /* pruning keeps the newest N */
    for (int k = 1; k <= 4; k++) {
        s2.global_step = 300 + k;
        slim__rt_ckpt_path(dir, s2.global_step, p2, sizeof p2);
        slim__rt_ckpt_save(p2, &s2, &err);
    }
    slim__rt_ckpt_prune(dir, 2);
    int64_t steps[16];
    int n = slim__rt_ckpt_list(dir, steps, NULL, 16);
    ok(n == 2 && steps[0] == 304 && steps[1] == 303, "pruning keeps the newest 2 (%d left)", n);

    for (int i = 0; i < np; i++)
        free(ema[i]);
    free(ema);
    slim_program_free(p);
    slim_attrs_free(a);
    slim_graph_free(g);
    slim_graph_free(g3);
    slim_graph_free(g4);
    slim_registry_free(reg);
}

/* ---- hostile checkpoints ------------------------------------------------------------ */

static void pack_write(slim_tfrecord_writer *w, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n ? n : 1);
    protobuf_c_message_pack(m, b);
    slim_tfrecord_write(w, b, n, NULL);
    free(b);
}

/* A checkpoint with valid CRCs and footer holding one tensor as given. */
static void write_one(const char *path, const char *model, const char *name, const int64_t *shape,
                      size_t rank, size_t bytes)
{
    slim_tfrecord_writer *w;
    if (slim_tfrecord_writer_new(path, SLIM_COMPRESSION_NONE, &w, NULL))
        return;
    Slimckpt__CheckpointHeader h = SLIMCKPT__CHECKPOINT_HEADER__INIT;
    h.version = 1;
    h.format = "slim-checkpoint";
    h.global_step = 7;
    h.model_name = (char *)model;
    h.has_n_tensors = true;
    h.n_tensors = 1;
    pack_write(w, &h.base);
    uint8_t *data = calloc(1, bytes ? bytes : 1);
    Slimckpt__CheckpointTensor t = SLIMCKPT__CHECKPOINT_TENSOR__INIT;
    t.name = (char *)name;
    t.n_shape = rank;
    t.shape = (int64_t *)shape;
    t.has_data = true;
    t.data.len = bytes;
    t.data.data = data;
    pack_write(w, &t.base);
    Slimckpt__CheckpointFooter f = SLIMCKPT__CHECKPOINT_FOOTER__INIT;
    f.n_tensors = 1;
    f.data_crc32c = slim_crc32c(0, data, bytes);
    pack_write(w, &f.base);
    free(data);
    slim_tfrecord_writer_close(w, NULL);
}

/* Shapes whose element count overflows (signed overflow before: [2^62, 4]
 * with no data and [2^62 + 1, 4] with 16 bytes passed), a shape that does
 * not match the data (its tensor was leaked), names with control and
 * non-UTF-8 bytes (printed raw). */
static void test_hostile_checkpoints(const char *dir)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/hostile.slimckpt", dir);
    struct {
        int64_t shape[9];
        size_t rank, bytes;
        const char *want;
    } c[] = {
        {{(int64_t)1 << 62, 4},
         2,
         0,
         "0 data bytes do not match its shape [4611686018427387904,4] (its element count "
         "overflows)"},
        {{((int64_t)1 << 62) + 1, 4},
         2,
         16,
         "16 data bytes do not match its shape [4611686018427387905,4] (its element count "
         "overflows)"},
        {{INT64_MAX, INT64_MAX, 2},
         3,
         8,
         "8 data bytes do not match its shape [9223372036854775807,9223372036854775807,2] (its "
         "element count overflows)"},
        {{-2, -2}, 2, 16, "16 data bytes do not match its shape [-2,-2] (a negative dimension)"},
        {{3}, 1, 8, "8 data bytes do not match its shape [3]"},
        {{1, 2, 3, 4, 5, 6, 7, 8, 9},
         9,
         4 * 362880,
         "do not match its shape [1,2,3,4,5,6,7,8,9] (too many dimensions)"},
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        write_one(path, "m", "net/w", c[k].shape, c[k].rank, c[k].bytes);
        slim_error err = {0};
        slim_status st = slim_checkpoint_verify(path, NULL, &err);
        char want[1300];
        snprintf(want, sizeof want, "%s: tensor 'net/w' at byte ", path);
        ok(st == SLIM_ECORRUPT && !strncmp(err.msg, want, strlen(want)) &&
               strstr(err.msg, c[k].want),
           "checkpoint tensor of shape case %zu refused with file and byte: %s", k, err.msg);
    }
    /* Stored names escaped: a bad tensor's, an unused one's (restore report), the model's. */
    int64_t sh[1] = {3};
    write_one(path, "evil\x1b]0;x\x07\xff", "net/\x1b[31mred\xc3", sh, 1, 8);
    slim_error err = {0};
    slim_checkpoint_verify(path, NULL, &err);
    ok(strstr(err.msg, "tensor 'net/\\x1b[31mred\\xc3' at byte") != NULL,
       "a bad tensor's stored name is printed escaped: %s", err.msg);
    write_one(path, "evil\x1b]0;x\x07\xff",
              "net/\x1b[31mr\xc3\xa9"
              "d",
              sh, 1, 12);
    slim_checkpoint_info info;
    slim_status st = slim_checkpoint_verify(path, &info, &err);
    ok(st == SLIM_OK && !strcmp(info.model_name, "evil\\x1b]0;x\\x07\\xff"),
       "the stored model name comes back escaped: %s", info.model_name);
    slim_registry *reg;
    slim_registry_new(&reg, &err);
    slim_graph *g = small_graph(reg, 5);
    slim_graph_init_params(g, 1, &err);
    char rep[512] = "";
    st = slim_checkpoint_restore(
        path, g,
        &(slim_restore_opts){
            .use_ema = 0, .ignore_missing_vars = true, .report = rep, .report_size = sizeof rep},
        NULL, &err);
    ok(st == SLIM_OK && strstr(rep, "unused net/\\x1b[31mr\xc3\xa9"
                                    "d (not in the model)"),
       "an unused tensor is reported escaped (UTF-8 kept): %s", rep);
    slim_graph_free(g);
    slim_registry_free(reg);
    char buf[16];
    ok(!strcmp(slim__printable("abcdefghijklmnop", buf, sizeof buf), "abcdefghijkl..."),
       "a long name is cut with ...: %s", buf);
}

/* ---- JSON lines and traces ----------------------------------------------------------------- */

static void test_writers(const char *dir)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/m.jsonl", dir);
    slim__rt_jsonl *j = slim__rt_jsonl_open(path, NULL);
    const char *keys[] = {"step", "loss"};
    double vals[] = {10, 0.5};
    slim__rt_jsonl_write(j, keys, vals, 2, "note", "a \"quoted\"\nline", NULL);
    slim__rt_jsonl_close(j);
    FILE *f = fopen(path, "r");
    char line[256] = "";
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = 0;
        fclose(f);
    }
    ok(!strcmp(line, "{\"step\": 10, \"loss\": 0.5, \"note\": \"a \\\"quoted\\\"\\u000aline\"}\n"),
       "a JSON line with escapes: %s", line);
    slim__rt_trace *t = slim__rt_trace_new(3);
    slim__rt_trace_thread(t, 0, "main", 0);
    double t0 = slim__rt_now();
    for (int i = 0; i < 5; i++)
        slim__rt_trace_span(t, 0, "step", "step", t0 + i, t0 + i + 0.5, NULL);
    snprintf(path, sizeof path, "%s/t.json", dir);
    ok(slim__rt_trace_write(t, path, NULL) == SLIM_OK && slim__rt_trace_dropped(t) == 2,
       "a trace keeps its first events and counts the rest");
    slim__rt_trace_free(t);
}

/* ---- a full disk ------------------------------------------------------------------------ */

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* The soft file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored): writes past it
 * fail with EFBIG as on a full disk. lim < 0: back to the hard limit. */
static void limit_files(long lim)
{
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = lim < 0 ? rl.rlim_max : (rlim_t)lim;
    setrlimit(RLIMIT_FSIZE, &rl);
}

static int count_lines(const char *path, bool *whole)
{
    FILE *f = fopen(path, "r");
    int lines = 0;
    *whole = true;
    if (f) {
        int ch, last = '\n';
        while ((ch = fgetc(f)) != EOF) {
            lines += ch == '\n';
            last = ch;
        }
        *whole = last == '\n';
        fclose(f);
    }
    return lines;
}

/* Metrics and events are written whole or not at all (issue 26: a full
 * disk cut metrics.jsonl's last line, and left a 0-byte events file). */
static void test_full_disk(const char *dir)
{
    signal(SIGXFSZ, SIG_IGN);
    char path[1200];
    snprintf(path, sizeof path, "%s/full.jsonl", dir);
    slim__rt_jsonl *j = slim__rt_jsonl_open(path, NULL);
    const char *keys[] = {"step", "loss", "accuracy"};
    double vals[] = {1, 0.123456, 0.5};
    slim_error err = {0};
    slim__rt_jsonl_write(j, keys, vals, 3, NULL, NULL, &err);
    vals[0] = 2;
    slim__rt_jsonl_write(j, keys, vals, 3, NULL, NULL, &err);
    long s0 = file_size(path);
    limit_files(s0 + 10); /* room for 10 bytes of the next line */
    vals[0] = 3;
    slim_status st = slim__rt_jsonl_write(j, keys, vals, 3, NULL, NULL, &err);
    limit_files(-1);
    bool whole;
    int lines = count_lines(path, &whole);
    ok(st == SLIM_EIO && strstr(err.msg, "full.jsonl: write failed") && file_size(path) == s0 &&
           lines == 2 && whole,
       "metrics: a line that does not fit is not written, the file keeps 2 whole lines: %s",
       err.msg);
    vals[0] = 4;
    st = slim__rt_jsonl_write(j, keys, vals, 3, NULL, NULL, &err);
    lines = count_lines(path, &whole);
    ok(st == SLIM_OK && lines == 3 && whole, "... and the next write, with room, appends whole");
    slim__rt_jsonl_close(j);

    /* events: no empty file when the first one cannot be written */
    char ed[1200];
    snprintf(ed, sizeof ed, "%s/ev", dir);
    mkdir(ed, 0755);
    slim__rt_events *e = slim__rt_events_new(ed);
    const char *tags[] = {"loss"};
    double v = 1.5;
    limit_files(0);
    err = (slim_error){0};
    st = slim__rt_events_scalars(e, 5, tags, &v, 1, &err);
    limit_files(-1);
    DIR *d = opendir(ed);
    int files = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        files += de->d_name[0] != '.';
    if (d)
        closedir(d);
    ok(st == SLIM_EIO && strstr(err.msg, "write failed") && files == 0 &&
           !slim__rt_events_path(e)[0],
       "events on a full disk: an error, no empty file left (%d files): %s", files, err.msg);
    st = slim__rt_events_scalars(e, 6, tags, &v, 1, &err);
    char ep[1300];
    snprintf(ep, sizeof ep, "%s", slim__rt_events_path(e));
    long es = file_size(ep);
    limit_files(es + 20);
    slim_status st2 = slim__rt_events_scalars(e, 7, tags, &v, 1, &err);
    limit_files(-1);
    slim__rt_events_close(e);
    int recs = 0;
    slim_tfrecord_reader *r = NULL;
    slim_status rs = slim_tfrecord_open(ep, SLIM_COMPRESSION_NONE, true, &r, &err);
    const uint8_t *data;
    size_t len;
    int64_t off;
    while (!rs && !(rs = slim_tfrecord_next(r, &data, &len, &off, &err)) && data)
        recs++;
    if (r)
        slim_tfrecord_close(r);
    ok(st == SLIM_OK && st2 == SLIM_EIO && file_size(ep) == es && rs == SLIM_OK && recs == 2,
       "events: made when there is room (2 records); a record that does not fit is cut off");

    /* a resumed run: the rows after its checkpoint's step go, and a cut line */
    snprintf(path, sizeof path, "%s/resume.jsonl", dir);
    const char *text = "{\"step\": 10, \"loss\": 1}\n{\"step\": 20, \"loss\": 0.9}\n"
                       "{\"step\": 20, \"eval_top1\": 0.5}\n{\"step\": 30, \"loss\": 0.8}\n"
                       "{\"step\": 40, \"lo";
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    int dropped = 0;
    st = slim__rt_jsonl_trim(path, 20, &dropped, &err);
    lines = count_lines(path, &whole);
    ok(st == SLIM_OK && dropped == 2 && lines == 3 && whole,
       "resumed at step 20: rows of steps 10, 20 and its eval kept, 30 and a cut line dropped");
}

int main(void)
{
    char dir[] = "/tmp/slim-rt.XXXXXX";
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    test_schedules();
    test_optimizers();
    test_events(dir);
    test_checkpoints(dir);
    test_hostile_checkpoints(dir);
    test_writers(dir);
    test_full_disk(dir);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    printf("1..%d\n", n_checks);
    return n_failed ? 1 : 0;
}
