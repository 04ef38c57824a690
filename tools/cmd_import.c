/*
 * tools/cmd_import.c - `slimrun import MODEL.onnx --out DIR`, and predict on
 * a NumPy tensor (`slimrun predict --input_npy=X.npy --output_npy=Y.npy`).
 *
 * import writes DIR/model.yaml (the model file the importer wrote, built once
 * by the DSL to check it) and DIR/model.ckpt-0.slimckpt (the ONNX file's
 * weights as the parameters' values), which every command taking --model and
 * --checkpoint_path then reads.
 */
#include "tools/cmd_import.h"

#include <slim/model.h>
#include <slim/train.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "interop/npy.h"
#include "interop/onnx.h"
#include "interop/tf_graph.h"
#include "runtime/checkpoint.h"
#include "tools/flags.h"

extern const slim_command slim_cmd_import;

typedef struct import_cli {
    const char *out, *name, *output_node;
    const char *const *plugins;
    int n_plugins;
} import_cli;

#define I(f) offsetof(import_cli, f)
static const flag_def import_flags[] = {
    {"out", FLAG_STR, I(out), 0, "the directory to write model.yaml and the checkpoint in"},
    {"name", FLAG_STR, I(name), 0,
     "the model's name, the root scope of its parameters (default: the file's name; for a "
     "TensorFlow graph the scope all its weights share, if any)"},
    {"plugin", FLAG_LIST, I(plugins), I(n_plugins),
     "load an op plugin first (ONNX ops it declares are mapped to it); repeatable"},
    {"output_node", FLAG_STR, I(output_node), 0,
     "a TensorFlow graph's output node (default: the one node nothing reads)"},
};
#define N_IMPORT_FLAGS ((int)(sizeof import_flags / sizeof import_flags[0]))

static int mkdirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static int import_main(int argc, char **argv)
{
    import_cli c = {0};
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char err[1024];
    if (flags_parse(import_flags, N_IMPORT_FLAGS, &c, argc, argv, 1, &fr, err, sizeof err)) {
        fprintf(stderr, "slimrun import: %s\n", err);
        return 2;
    }
    if (fr.help || fr.n_pos != 1 || !c.out) {
        flags_usage(fr.help ? stdout : stderr,
                    "usage: slimrun import MODEL.onnx|FROZEN.pb --out=DIR [--name=NAME] "
                    "[--plugin=PATH]\n\n"
                    "An ONNX image classifier or a frozen TensorFlow GraphDef as a slim model:\n"
                    "DIR/model.yaml (its layers, to read and edit) and DIR/model.ckpt-0.slimckpt\n"
                    "(its weights). The model's input keeps the source's layout for predict\n"
                    "--input_npy: (N, C, H, W) for ONNX, (N, H, W, C) for TensorFlow.",
                    import_flags, N_IMPORT_FLAGS);
        return fr.help ? 0 : 2;
    }
    const char *src = fr.pos[0];
    slim_registry *reg = NULL;
    slim_model *m = NULL;
    char *yaml = NULL;
    slim_error e = {0};
    int rc = 1;
    bool tf = slim__tfg_is_graph_path(src);
    char note[200] = "";
    slim__tfg_opts to = {.output = c.output_node, .note = note, .note_size = sizeof note};
    if (c.output_node && !tf) {
        fprintf(stderr, "slimrun import: --output_node is for TensorFlow graphs (.pb)\n");
        return 2;
    }
    slim_model_opts mo = {
        .batch_size = 1, .weight_decay = -1, .plugins = c.plugins, .n_plugins = c.n_plugins};
    if (slim_registry_new(&reg, &e) ||
        (tf ? slim__tfg_model_load(reg, src, c.name, &to, &mo, &m, &yaml, &e)
            : slim__onnx_model_load(reg, src, c.name, &mo, &m, &yaml, &e)) ||
        slim_graph_init_params(slim_model_graph(m), 0, &e))
        goto fail;
    if (mkdirs(c.out) != 0) {
        fprintf(stderr, "slimrun import: cannot create %s: %s\n", c.out, strerror(errno));
        goto done;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/model.yaml", c.out);
    FILE *f = fopen(path, "w");
    if (!f || fputs(yaml, f) == EOF || fclose(f) != 0) {
        fprintf(stderr, "slimrun import: cannot write %s: %s\n", path, strerror(errno));
        goto done;
    }
    const slim_model_info *mi = slim_model_get_info(m);
    slim__rt_ckpt_state s = {.g = slim_model_graph(m),
                             .model_name = mi->name,
                             .optimizer = "",
                             .run_config = "",
                             .num_classes = mi->num_classes,
                             .batch_size = 1};
    char ckpt[1200];
    slim__rt_ckpt_path(c.out, 0, ckpt, sizeof ckpt);
    if (slim__rt_ckpt_save(ckpt, &s, &e))
        goto fail;
    if (mi->input_nchw)
        printf("imported %s: %d layers, %lld parameters, input (N,%d,%d,%d) NCHW, %d classes\n",
               src, mi->n_layers, (long long)mi->n_params, mi->channels, mi->image_size,
               mi->image_size, mi->num_classes);
    else
        printf("imported %s: %d layers, %lld parameters, input (N,%d,%d,%d) NHWC, %d classes\n",
               src, mi->n_layers, (long long)mi->n_params, mi->image_size, mi->image_size,
               mi->channels, mi->num_classes);
    if (note[0])
        printf("dropped after the logits: %s (slim's models end in the logits)\n", note);
    printf("wrote %s\nwrote %s\n", path, ckpt);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "slimrun import: %s\n", e.msg);
done:
    free(yaml);
    slim_model_free(m);
    slim_registry_free(reg);
    return rc;
}

const slim_command slim_cmd_import = {"import", "an ONNX model as a slim model file + checkpoint",
                                      import_main};

/* ---- predict on a .npy tensor ------------------------------------------------------- */

int slim__predict_npy(const predict_npy_args *a)
{
    slim_error e = {0};
    slim__npy x = {0};
    slim_registry *reg = NULL;
    slim_model *m = NULL;
    slim_program *p = NULL;
    int rc = 1;
    const char *model = a->model;
    if (!model) {
        fprintf(stderr, "slimrun predict: --input_npy needs --model (a model file, or an .onnx "
                        "file) or --model_name\n");
        return 2;
    }
    size_t ml = strlen(model);
    bool onnx = ml > 5 && !strcasecmp(model + ml - 5, ".onnx");
    if (!a->checkpoint && !onnx && !slim__tfg_is_graph_path(model)) {
        fprintf(stderr, "slimrun predict: --checkpoint_path is needed (only an .onnx model "
                        "or a frozen TensorFlow graph brings its own weights)\n");
        return 2;
    }
    if (slim__npy_read(a->input, &x, &e))
        goto fail;
    if (x.rank != 4) {
        char s[160];
        fprintf(stderr, "slimrun predict: %s has shape %s; a batch of images is 4-D\n", a->input,
                slim__ox_dims_str(x.rank, x.dim, s, sizeof s));
        goto done;
    }
    char ckpt[1024] = "";
    slim_checkpoint_info info = {0};
    if (a->checkpoint) {
        struct stat sb;
        if (stat(a->checkpoint, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            if (slim_checkpoint_latest(a->checkpoint, ckpt, sizeof ckpt, NULL, 0, &e))
                goto fail;
        } else {
            snprintf(ckpt, sizeof ckpt, "%s", a->checkpoint);
        }
        if (slim_checkpoint_verify(ckpt, &info, &e))
            goto fail;
    }
    char path[1024];
    slim_model_opts mo = {.batch_size = (int)x.dim[0],
                          .num_classes = a->num_classes ? a->num_classes : info.num_classes,
                          .image_size = a->image_size,
                          .weight_decay = -1,
                          .plugins = a->plugins,
                          .n_plugins = a->n_plugins,
                          .defines = a->defines,
                          .n_defines = a->n_defines};
    if (x.dim[0] < 1 || x.dim[0] > 1 << 16) {
        fprintf(stderr, "slimrun predict: %s: a batch of %lld\n", a->input, (long long)x.dim[0]);
        goto done;
    }
    if (slim_registry_new(&reg, &e) || slim_model_find(model, path, sizeof path, &e) ||
        slim_model_load(reg, path, &mo, &m, &e))
        goto fail;
    const slim_model_info *mi = slim_model_get_info(m);
    int64_t N = x.dim[0], S = mi->image_size, C = mi->channels;
    bool nchw = mi->input_nchw;
    int64_t want[4] = {N, nchw ? C : S, S, nchw ? S : C};
    if (memcmp(want, x.dim, sizeof want) != 0) {
        char got[160], exp[160];
        fprintf(stderr, "slimrun predict: %s has shape %s; model %s takes %s (%s)\n", a->input,
                slim__ox_dims_str(4, x.dim, got, sizeof got), mi->name,
                slim__ox_dims_str(4, want, exp, sizeof exp),
                nchw ? "N, C, H, W: its input_layout is NCHW" : "N, H, W, C");
        goto done;
    }
    slim_compile_opts co = {.training = false, .num_threads = a->num_threads};
    if (slim_graph_compile(slim_model_graph(m), &co, &p, &e))
        goto fail;
    slim_restore_opts ro = {.use_ema = a->use_ema, .assignment_map = a->assignment_map};
    if (ckpt[0] && slim_checkpoint_restore(ckpt, slim_model_graph(m), &ro, NULL, &e))
        goto fail;
    slim_tensor in, lg;
    if (slim_program_input(p, "images", &in, &e))
        goto fail;
    float *dst = in.data;
    if (nchw) {
        /* (N, C, H, W) -> images (N, H, W, C) */
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t s = 0; s < S * S; s++)
                    dst[(n * S * S + s) * C + c] = x.data[(n * C + c) * S * S + s];
    } else {
        memcpy(dst, x.data, (size_t)x.numel * sizeof(float));
    }
    if (slim_program_run(p, NULL, &e) || slim_program_output(p, "logits", &lg, &e))
        goto fail;
    if (slim__npy_write(a->output, lg.data, lg.shape.rank, lg.shape.dim, &e))
        goto fail;
    char s[160];
    fprintf(stderr, "wrote %s: logits %s\n", a->output,
            slim__ox_dims_str(lg.shape.rank, lg.shape.dim, s, sizeof s));
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "slimrun predict: %s\n", e.msg);
done:
    slim__npy_free(&x);
    slim_program_free(p);
    slim_model_free(m);
    slim_registry_free(reg);
    return rc;
}
