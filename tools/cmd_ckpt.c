/*
 * tools/cmd_ckpt.c - `slimrun ckpt`: look into checkpoints of any format slim
 * reads (its own, TensorFlow V1 and V2).
 *
 *   ckpt ls FILE [--tensor_name=NAME]  names, kinds, dtypes, shapes, sizes
 *                                       (TensorFlow's inspect_checkpoint)
 *   ckpt diff MODEL FILE               what restoring FILE into MODEL would do
 *   ckpt convert IN OUT                between slim's format and TensorFlow's
 */
#include "tools/cmd.h"
#include "tools/flags.h"

#include "core/error.h"
#include "runtime/ckpt_convert.h"
#include "runtime/ckpt_reader.h"
#include "runtime/ckpt_restore.h"

#include <slim/model.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A name read from a file, as text safe to print (rotating buffers). */
static const char *pn(const char *s)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    return slim__printable(s, buf[k], sizeof buf[k]);
}

static const char *kind_name(slim__ckpt_kind k)
{
    switch (k) {
    case SLIM__CK_VALUE: return "value";
    case SLIM__CK_EMA: return "ema";
    case SLIM__CK_SLOT: return "slot";
    case SLIM__CK_OPT: return "opt";
    case SLIM__CK_STEP: return "step";
    case SLIM__CK_META: return "meta";
    }
    return "?";
}

static void shape_text(const slim__ckpt_entry *e, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < e->rank && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)e->dim[i]);
    if (o < n)
        snprintf(buf + o, n - o, "]");
}

typedef struct ckpt_cli {
    const char *tensor_name, *format, *exclude, *assignment_map, *use_ema;
    bool all_tensors;
    int num_classes, image_size, num_shards;
    const char *const *defines;
    int n_defines;
} ckpt_cli;

#define K(f) offsetof(ckpt_cli, f)
static const flag_def ls_flags[] = {
    {"tensor_name", FLAG_STR, K(tensor_name), 0, "print this tensor's values"},
    {"all_tensors", FLAG_BOOL, K(all_tensors), 0, "print every tensor's values"},
};
static const flag_def diff_flags[] = {
    {"num_classes", FLAG_INT, K(num_classes), 0, "the model's classes (default: its own)"},
    {"image_size", FLAG_INT, K(image_size), 0, "the model's input size"},
    {"set", FLAG_LIST, K(defines), K(n_defines), "NAME=VALUE: a var: of the model; repeatable"},
    {"checkpoint_exclude_scopes", FLAG_STR, K(exclude), 0, "scopes not restored"},
    {"checkpoint_assignment_map", FLAG_STR, K(assignment_map), 0,
     "CKPT_SCOPE=MODEL_SCOPE,...: where parameters come from"},
    {"use_ema", FLAG_STR, K(use_ema), 0, "moving averages: auto, true, false (false)"},
};
static const flag_def convert_flags[] = {
    {"format", FLAG_STR, K(format), 0, "slim, v1 or v2 (default: slim for .slimckpt, else v2)"},
    {"num_shards", FLAG_INT, K(num_shards), 0, "V2 data files (1)"},
};
#define N_FLAGS(t) ((int)(sizeof t / sizeof t[0]))

/* Parse argv of subcommand sub with flags defs: exactly npos positionals
 * into pos. Returns -1 to go on, else the exit code. */
static int parse(const char *sub, const flag_def *defs, int n_defs, const char *usage, int npos,
                 int argc, char **argv, ckpt_cli *cli, flags_result *fr, const char **pos)
{
    memset(cli, 0, sizeof *cli);
    memset(fr, 0, sizeof *fr);
    char err[1024];
    if (flags_parse(defs, n_defs, cli, argc, argv, 0, fr, err, sizeof err)) {
        fprintf(stderr, "slimrun ckpt %s: %s\n", sub, err);
        return 2;
    }
    if (fr->help || fr->n_pos != npos) {
        flags_usage(fr->help ? stdout : stderr, usage, defs, n_defs);
        return fr->help ? 0 : 2;
    }
    for (int i = 0; i < npos; i++)
        pos[i] = fr->pos[i];
    return -1;
}

/* Values of one tensor: summary and the first few. */
static int print_values(slim__ckpt *c, int i)
{
    const slim__ckpt_entry *e = slim__ckpt_at(c, i);
    slim_error err = {0};
    void *raw;
    size_t len;
    if (slim__ckpt_read_raw(c, i, &raw, &len, &err)) {
        fprintf(stderr, "slimrun ckpt: %s\n", err.msg);
        return 1;
    }
    int64_t n = e->numel, show = n < 10 ? n : 10;
    if (e->dtype == SLIM__DT_STRING) {
        const uint8_t *s = (const uint8_t *)raw + 8 * n;
        for (int64_t k = 0; k < show; k++) {
            uint64_t l;
            memcpy(&l, (const uint8_t *)raw + 8 * k, 8);
            printf("  [%lld] %llu bytes: \"", (long long)k, (unsigned long long)l);
            for (uint64_t j = 0; j < l && j < 64; j++)
                putchar(s[j] >= 32 && s[j] < 127 ? s[j] : '.');
            printf("\"%s\n", l > 64 ? "..." : "");
            s += l;
        }
    } else if (slim__dt_is_real(e->dtype)) {
        float *v = malloc(n ? (size_t)n * sizeof *v : 1);
        if (!v || slim__ckpt_read_f32(c, i, v, n, &err)) {
            fprintf(stderr, "slimrun ckpt: %s\n", v ? err.msg : "out of memory");
            free(v);
            free(raw);
            return 1;
        }
        double sum = 0, mn = n ? v[0] : 0, mx = n ? v[0] : 0;
        for (int64_t k = 0; k < n; k++) {
            sum += v[k];
            mn = v[k] < mn ? v[k] : mn;
            mx = v[k] > mx ? v[k] : mx;
        }
        printf("  sum %.9g  mean %.9g  min %.9g  max %.9g\n", sum, n ? sum / (double)n : 0, mn, mx);
        printf(" ");
        for (int64_t k = 0; k < show; k++)
            printf(" %.9g", v[k]);
        printf("%s\n", n > show ? " ..." : "");
        free(v);
    } else {
        printf(" ");
        int es = slim__dt_size(e->dtype);
        for (int64_t k = 0; k < show; k++) {
            const uint8_t *p = (const uint8_t *)raw + k * es;
            long long x = 0;
            if (e->dtype == SLIM__DT_INT64 || e->dtype == SLIM__DT_UINT64) {
                int64_t y;
                memcpy(&y, p, 8);
                x = y;
            } else if (es == 4) {
                int32_t y;
                memcpy(&y, p, 4);
                x = y;
            } else if (es == 2) {
                int16_t y;
                memcpy(&y, p, 2);
                x = y;
            } else {
                x = e->dtype == SLIM__DT_INT8 ? (int8_t)p[0] : p[0];
            }
            printf(" %lld", x);
        }
        printf("%s\n", n > show ? " ..." : "");
    }
    free(raw);
    return 0;
}

static int ckpt_ls(int argc, char **argv)
{
    ckpt_cli cli;
    flags_result fr;
    const char *path;
    int rc = parse("ls", ls_flags, N_FLAGS(ls_flags),
                   "usage: slimrun ckpt ls CHECKPOINT [FLAGS]\n\nEvery tensor: name, kind (value, "
                   "ema, slot, opt, step, meta), dtype, shape, bytes.",
                   1, argc, argv, &cli, &fr, &path);
    if (rc >= 0)
        return rc;
    const char *tensor = cli.tensor_name;
    bool all = cli.all_tensors;
    slim__ckpt *c;
    slim_error err = {0};
    if (slim__ckpt_open(path, &c, &err)) {
        fprintf(stderr, "slimrun ckpt ls: %s\n", err.msg);
        return 1;
    }
    rc = 0;
    if (tensor) {
        int i = slim__ckpt_find(c, tensor);
        if (i < 0) {
            fprintf(stderr, "slimrun ckpt ls: %s has no tensor '%s'\n", slim__ckpt_path(c), tensor);
            rc = 1;
        } else {
            const slim__ckpt_entry *e = slim__ckpt_at(c, i);
            char sh[256];
            shape_text(e, sh, sizeof sh);
            printf("%s  %s  %s\n", pn(e->name), slim__dt_name(e->dtype), sh);
            rc = print_values(c, i);
        }
        slim__ckpt_close(c);
        return rc;
    }
    int64_t bytes = 0;
    size_t w = 4;
    for (int i = 0; i < slim__ckpt_count(c); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        bytes += e->stored;
        w = strlen(e->name) > w ? strlen(e->name) : w;
    }
    if (w > 80)
        w = 80;
    printf("%s: %s, %d tensors, %lld bytes", slim__ckpt_path(c), slim__ckpt_describe(c),
           slim__ckpt_count(c), (long long)bytes);
    if (slim__ckpt_global_step(c) >= 0)
        printf(", global_step %lld", (long long)slim__ckpt_global_step(c));
    const Slimckpt__CheckpointHeader *h = slim__ckpt_header(c);
    if (h && h->model_name && h->model_name[0])
        printf(", model %s", h->model_name);
    printf("\n%-*s  %-5s  %-8s  %-20s  %s\n", (int)w, "name", "kind", "dtype", "shape", "bytes");
    for (int i = 0; i < slim__ckpt_count(c); i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        char sh[256];
        shape_text(e, sh, sizeof sh);
        printf("%-*s  %-5s  %-8s  %-20s  %lld", (int)w, pn(e->name), kind_name(e->kind),
               slim__dt_name(e->dtype), sh, (long long)e->stored);
        if (e->n_slices)
            printf("  (%d slices)", e->n_slices);
        if (e->key)
            printf("  (key %s)", e->key);
        printf("\n");
        if (all && print_values(c, i))
            rc = 1;
    }
    slim__ckpt_close(c);
    return rc;
}

/* ---- diff ----------------------------------------------------------------------- */

static void param_shape(slim_graph *g, int i, const char **nm, char *buf, size_t n)
{
    slim_tensor v;
    unsigned fl;
    slim_graph_param_at(g, i, nm, &v, &fl);
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int k = 0; k < v.shape.rank && o < n; k++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", k ? ", " : "", (long long)v.shape.dim[k]);
    if (o < n)
        snprintf(buf + o, n - o, "]");
}

static int ckpt_diff(int argc, char **argv)
{
    ckpt_cli cli;
    flags_result fr;
    const char *pos[2];
    int prc = parse("diff", diff_flags, N_FLAGS(diff_flags),
                    "usage: slimrun ckpt diff MODEL CHECKPOINT [FLAGS]\n\nWhat restoring "
                    "CHECKPOINT into MODEL (a zoo name or a model file) would do. Exit 1 when\n"
                    "something the model needs is missing or differs.",
                    2, argc, argv, &cli, &fr, pos);
    if (prc >= 0)
        return prc;
    const char *excl = cli.exclude, *amap = cli.assignment_map, *ema = cli.use_ema;
    slim_error err = {0};
    slim_registry *reg = NULL;
    slim_model *m = NULL;
    slim__ckpt *c = NULL;
    char path[1024];
    slim_model_opts mo = {.batch_size = 1,
                          .num_classes = cli.num_classes,
                          .image_size = cli.image_size,
                          .defines = cli.defines,
                          .n_defines = cli.n_defines};
    int rc = 1;
    if (slim_registry_new(&reg, &err) || slim_model_find(pos[0], path, sizeof path, &err) ||
        slim_model_load(reg, path, &mo, &m, &err) || slim__ckpt_open(pos[1], &c, &err)) {
        fprintf(stderr, "slimrun ckpt diff: %s\n", err.msg);
        goto done;
    }
    slim_graph *g = slim_model_graph(m);
    slim_restore_opts ro = {.exclude_scopes = excl, .assignment_map = amap};
    bool take_ema =
        ema ? !strcmp(ema, "true") || (!strcmp(ema, "auto") && slim__ckpt_has_ema(c)) : false;
    slim__ckpt_plan p;
    if (slim__ckpt_plan_make(c, g, &ro, take_ema, &p, &err)) {
        fprintf(stderr, "slimrun ckpt diff: %s\n", err.msg);
        goto done;
    }
    const slim_model_info *mi = slim_model_get_info(m);
    printf("model %s (%s), %d parameters\ncheckpoint %s: %s, %d tensors\n", mi->name, mi->path,
           p.np, slim__ckpt_path(c), slim__ckpt_describe(c), slim__ckpt_count(c));
    int64_t values = 0;
    int n_const = 0;
    for (int i = 0; i < p.np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        if (p.status[i] == SLIM__PLAN_LOAD || p.status[i] == SLIM__PLAN_EMA)
            values += slim_shape_numel(&v.shape);
        n_const += p.status[i] == SLIM__PLAN_CONST;
    }
    printf("would restore %d of %d parameters (%lld values)%s", p.n_load, p.np - n_const,
           (long long)values, p.n_ema ? "" : "\n");
    if (p.n_ema)
        printf(", %d from their moving averages\n", p.n_ema);
    static const struct {
        int status;
        const char *title;
    } groups[] = {{SLIM__PLAN_SHAPE, "shapes that differ"},
                  {SLIM__PLAN_DTYPE, "not real numbers in the checkpoint"},
                  {SLIM__PLAN_MISSING, "missing in the checkpoint"},
                  {SLIM__PLAN_EXCLUDED, "excluded (--checkpoint_exclude_scopes)"}};
    for (size_t gi = 0; gi < sizeof groups / sizeof *groups; gi++) {
        int cnt = 0;
        for (int i = 0; i < p.np; i++)
            cnt += p.status[i] == groups[gi].status;
        if (!cnt)
            continue;
        printf("%s (%d):\n", groups[gi].title, cnt);
        for (int i = 0; i < p.np; i++) {
            if (p.status[i] != groups[gi].status)
                continue;
            const char *nm;
            char sh[256], cs[256] = "";
            param_shape(g, i, &nm, sh, sizeof sh);
            if (p.src[i] >= 0) {
                shape_text(slim__ckpt_at(c, p.src[i]), cs, sizeof cs);
                printf("  %s  model %s, checkpoint %s %s\n", nm, sh,
                       pn(slim__ckpt_at(c, p.src[i])->name), cs);
            } else {
                const char *near =
                    groups[gi].status == SLIM__PLAN_MISSING ? slim__ckpt_nearest(c, &p, nm) : NULL;
                printf("  %s %s%s%s%s\n", nm, sh, near ? "  (nearest: " : "", near ? pn(near) : "",
                       near ? ")" : "");
            }
        }
    }
    if (p.n_unused || p.n_unused_excluded) {
        printf("in the checkpoint, not in the model (%d):\n", p.n_unused + p.n_unused_excluded);
        for (int k = 0; k < slim__ckpt_count(c); k++) {
            const slim__ckpt_entry *e = slim__ckpt_at(c, k);
            if (p.used[k] || e->kind != SLIM__CK_VALUE)
                continue;
            char cs[256];
            shape_text(e, cs, sizeof cs);
            printf("  %s %s\n", pn(e->name), cs);
        }
    }
    int other = p.n_ema_unused + p.n_opt;
    int gs = slim__ckpt_find(c, "global_step");
    if (other || gs >= 0)
        printf("not restored: %d moving averages, %d optimizer tensors%s\n", p.n_ema_unused,
               p.n_opt, gs >= 0 ? ", global_step" : "");
    rc = p.n_missing || p.n_bad ? 1 : 0;
    slim__ckpt_plan_free(&p);
done:
    slim__ckpt_close(c);
    slim_model_free(m);
    slim_registry_free(reg);
    return rc;
}

/* ---- convert -------------------------------------------------------------------- */

static int ckpt_convert(int argc, char **argv)
{
    ckpt_cli cli;
    flags_result fr;
    const char *pos[2];
    int prc = parse("convert", convert_flags, N_FLAGS(convert_flags),
                    "usage: slimrun ckpt convert IN OUT [FLAGS]\n\nIN in any format slim reads; "
                    "OUT in slim's (OUT.slimckpt), TensorFlow V2 (a prefix)\nor V1 (one file).",
                    2, argc, argv, &cli, &fr, pos);
    if (prc >= 0)
        return prc;
    const char *fmt = cli.format;
    slim_error err = {0};
    slim_registry *reg = NULL;
    char notes[4096];
    int rc = 0;
    if (slim_registry_new(&reg, &err) ||
        slim__ckpt_convert(pos[0], pos[1], fmt, cli.num_shards > 0 ? cli.num_shards : 1, reg, notes,
                           sizeof notes, &err)) {
        fprintf(stderr, "slimrun ckpt convert: %s\n", err.msg);
        rc = 1;
    } else {
        fputs(notes, stderr);
        slim__ckpt *c;
        if (slim__ckpt_open(pos[1], &c, &err) == SLIM_OK) {
            printf("wrote %s: %s, %d tensors\n", slim__ckpt_path(c), slim__ckpt_describe(c),
                   slim__ckpt_count(c));
            slim__ckpt_close(c);
        } else {
            printf("wrote %s\n", pos[1]);
        }
    }
    slim_registry_free(reg);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: slimrun ckpt ls CHECKPOINT [--tensor_name=NAME] [--all_tensors]\n"
               "       slimrun ckpt diff MODEL CHECKPOINT [--num_classes=N] [--image_size=N]\n"
               "                 [--set NAME=VALUE] [--checkpoint_exclude_scopes=SCOPES]\n"
               "                 [--checkpoint_assignment_map=CKPT=MODEL,...] [--use_ema=...]\n"
               "       slimrun ckpt convert IN OUT [--format=slim|v1|v2] [--num_shards=N]\n"
               "\n"
               "CHECKPOINT is slim's (.slimckpt), a TensorFlow V1 file, a V2 prefix (or its\n"
               ".index), or a directory (its newest checkpoint, or what its `checkpoint`\n"
               "file names). MODEL is a zoo name or a model file.\n"
               "\n"
               "  ls       every tensor: name, kind (value, ema, slot, opt, step, meta), dtype,\n"
               "           shape, bytes; --tensor_name prints one tensor's values,\n"
               "           --all_tensors every tensor's (TensorFlow's inspect_checkpoint)\n"
               "  diff     what restoring CHECKPOINT into MODEL would do: what loads, what is\n"
               "           missing, excluded or in the checkpoint only, what differs in shape;\n"
               "           exit 1 when something the model needs is missing or differs\n"
               "  convert  OUT in slim's format (OUT.slimckpt, or --format=slim), TensorFlow\n"
               "           V2 (a prefix, the default) or V1 (--format=v1: one file, TF-Slim's\n"
               "           2016-2017 format)\n");
}

static int ckpt_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "ls"))
        return ckpt_ls(argc - 2, argv + 2);
    if (!strcmp(argv[1], "diff"))
        return ckpt_diff(argc - 2, argv + 2);
    if (!strcmp(argv[1], "convert"))
        return ckpt_convert(argc - 2, argv + 2);
    fprintf(stderr, "slimrun ckpt: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

const slim_command slim_cmd_ckpt = {
    "ckpt", "list, compare and convert checkpoints (slim's, TensorFlow V1 and V2)", ckpt_main};
