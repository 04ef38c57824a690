/*
 * tools/cmd_export.c - `slimrun export`: a model and its checkpoint as an
 * ONNX inference model (interop/onnx_export.c does the graph).
 *
 * The model is built for inference at the batch asked for (2 for a dynamic
 * batch: any size not 1 tells the batch axis apart), the checkpoint restored
 * (its moving averages when it has them, as predict does), and the graph from
 * "images" to "logits" and "predictions" written with the ONNX names
 * images, logits and probabilities.
 */
#include <slim/model.h>
#include <slim/train.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "interop/onnx_export.h"
#include "tools/cli.h"

extern const slim_command slim_cmd_export;

typedef struct export_cli {
    const char *model, *model_name, *checkpoint_path, *output, *format, *batch, *input_layout;
    const char *use_ema;
    bool fold_batch_norm;
    int opset, num_classes, image_size;
    const char *const *plugins;
    int n_plugins;
    const char *const *defines;
    int n_defines;
} export_cli;

#define X(f) offsetof(export_cli, f)
static const flag_def export_flags[] = {
    {"model", FLAG_STR, X(model), 0,
     "a model file (.yaml), an .onnx file or a zoo name (default: the one the checkpoint names)"},
    {"model_name", FLAG_STR, X(model_name), 0, "a zoo model (instead of --model)"},
    {"checkpoint_path", FLAG_STR, X(checkpoint_path), 0,
     "a checkpoint file or a train_dir (its newest); needed unless --model is .onnx"},
    {"output", FLAG_STR, X(output), 0, "the ONNX file to write"},
    {"out", FLAG_STR, X(output), 0, "the same as --output"},
    {"format", FLAG_STR, X(format), 0, "onnx (the only one)"},
    {"opset", FLAG_INT, X(opset), 0, "ONNX opset, 13 to 21 (13)"},
    {"batch", FLAG_STR, X(batch), 0, "dynamic, or a fixed batch size N (dynamic)"},
    {"input_layout", FLAG_STR, X(input_layout), 0,
     "NCHW or NHWC: the ONNX input's layout (default: what predict --input_npy takes: NHWC, or "
     "NCHW for a model with input_layout: NCHW)"},
    {"fold_batch_norm", FLAG_BOOL, X(fold_batch_norm), 0,
     "batch norm folded into the layer before it where possible (true); false: kept as "
     "BatchNormalization nodes"},
    {"use_ema", FLAG_STR, X(use_ema), 0, "moving-average weights: auto, true, false (auto)"},
    {"num_classes", FLAG_INT, X(num_classes), 0, "classes of the head (default: the checkpoint's)"},
    {"image_size", FLAG_INT, X(image_size), 0,
     "input size (default: the checkpoint's --train_image_size, else the model's)"},
    {"set", FLAG_LIST, X(defines), X(n_defines),
     "NAME=VALUE: override a var: of the model (default: the checkpoint's); repeatable"},
    {"plugin", FLAG_LIST, X(plugins), X(n_plugins), "load an op plugin first; repeatable"},
};
#define N_EXPORT_FLAGS ((int)(sizeof export_flags / sizeof export_flags[0]))

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcasecmp(s + n - k, suffix);
}

/* --flag=true|false (or 1/0, yes/no) into *v; false on anything else. */
static bool parse_bool(const char *s, bool *v)
{
    if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes"))
        return *v = true, true;
    if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no"))
        return *v = false, true;
    return false;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "slimrun export: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

static int export_main(int argc, char **argv)
{
    export_cli c = {.fold_batch_norm = true};
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char err[1024];
    if (flags_parse(export_flags, N_EXPORT_FLAGS, &c, argc, argv, 1, &fr, err, sizeof err)) {
        fprintf(stderr, "slimrun export: %s\n", err);
        return 2;
    }
    const char *model = c.model ? c.model : c.model_name;
    if (fr.help || fr.n_pos || (!model && !c.checkpoint_path) || !c.output) {
        flags_usage(fr.help ? stdout : stderr,
                    "usage: slimrun export [--model=MODEL] --checkpoint_path=CKPT "
                    "--output=FILE.onnx [FLAGS]\n\n"
                    "A trained model as an ONNX inference model: input images, outputs logits\n"
                    "and probabilities (softmax), dropout removed, batch norm folded or kept.\n"
                    "ONNX Runtime gives the same logits as `slimrun predict --input_npy`.",
                    export_flags, N_EXPORT_FLAGS);
        return fr.help ? 0 : 2;
    }
    if (c.format && strcasecmp(c.format, "onnx") != 0)
        return usage_error("--format=%s: slim exports ONNX only", c.format);
    slim__onnx_export_opts eo = {.opset = c.opset ? c.opset : 13, .fold_batch_norm = true};
    int batch = 2;
    if (!c.batch || !strcmp(c.batch, "dynamic")) {
        eo.dynamic_batch = true;
    } else {
        char *end;
        long b = strtol(c.batch, &end, 10);
        if (*end || b < 1 || b > 1 << 16)
            return usage_error("--batch=%s: expected dynamic or a batch size (1 to 65536)",
                               c.batch);
        batch = (int)b;
    }
    eo.fold_batch_norm = c.fold_batch_norm;
    if (c.input_layout && strcasecmp(c.input_layout, "NCHW") && strcasecmp(c.input_layout, "NHWC"))
        return usage_error("--input_layout=%s: expected NCHW or NHWC", c.input_layout);
    int use_ema = -1;
    if (c.use_ema && strcasecmp(c.use_ema, "auto")) {
        bool v;
        if (!parse_bool(c.use_ema, &v))
            return usage_error("--use_ema=%s: expected auto, true or false", c.use_ema);
        use_ema = v;
    }
    bool onnx = model && ends_with(model, ".onnx");
    if (!c.checkpoint_path && !onnx) {
        fprintf(stderr, "slimrun export: --checkpoint_path is needed (only an .onnx model brings "
                        "its own weights)\n");
        return 2;
    }

    slim_error e = {0};
    slim_registry *reg = NULL;
    slim_model *m = NULL;
    int rc = 1;
    /* the checkpoint: slim's newest in a train_dir, verified, its header giving the class
     * count; anything else (a TensorFlow checkpoint, where the restore reads them) goes to
     * the restore as given, which says what is wrong with it */
    char ckpt[1024] = "";
    slim_checkpoint_info info = {0};
    if (c.checkpoint_path) {
        struct stat sb;
        slim_error ve = {0};
        snprintf(ckpt, sizeof ckpt, "%s", c.checkpoint_path);
        bool dir = stat(c.checkpoint_path, &sb) == 0 && S_ISDIR(sb.st_mode);
        if (dir && slim_checkpoint_latest(c.checkpoint_path, ckpt, sizeof ckpt, NULL, 0, &ve))
            snprintf(ckpt, sizeof ckpt, "%s", c.checkpoint_path);
        else if (slim_checkpoint_verify(ckpt, &info, &ve) && ends_with(ckpt, ".slimckpt")) {
            e = ve;
            goto fail;
        }
    }
    /* the model as trained (as predict builds it): its --set overrides when it is the
     * checkpoint's model, its image size */
    slim_cli_trained tr;
    if (!slim_cli_as_trained(&info, model, c.defines, c.n_defines, &tr)) {
        fprintf(stderr, "slimrun export: %s does not name its model: give --model\n", ckpt);
        return 2;
    }
    model = tr.model;
    char path[1024];
    slim_model_opts mo = {.batch_size = batch,
                          .num_classes = c.num_classes ? c.num_classes : info.num_classes,
                          .image_size = c.image_size ? c.image_size : info.image_size,
                          .weight_decay = -1,
                          .plugins = c.plugins,
                          .n_plugins = c.n_plugins,
                          .defines = tr.defines,
                          .n_defines = tr.n_defines};
    if (slim_registry_new(&reg, &e) || slim_model_find(model, path, sizeof path, &e) ||
        slim_model_load(reg, path, &mo, &m, &e))
        goto fail;
    slim_graph *g = slim_model_graph(m);
    if (slim_graph_init_params(g, 0, &e)) /* an .onnx model's own weights, or the file's */
        goto fail;
    slim_restore_opts ro = {.use_ema = use_ema};
    if (ckpt[0] && slim_checkpoint_restore(ckpt, g, &ro, NULL, &e))
        goto fail;
    const slim_model_info *mi = slim_model_get_info(m);
    eo.input_nchw = c.input_layout ? !strcasecmp(c.input_layout, "NCHW") : mi->input_nchw;
    eo.input = "images";
    eo.outputs[0] = "logits";
    eo.output_names[0] = "logits";
    eo.outputs[1] = "predictions";
    eo.output_names[1] = "probabilities";
    eo.graph_name = mi->name;
    char doc[2300];
    snprintf(doc, sizeof doc, "%s exported by slim %s from %s%s%s", mi->name, slim_version(), path,
             ckpt[0] ? " and " : "", ckpt);
    eo.doc = doc;
    if (slim__onnx_export_file(g, &eo, c.output, &e))
        goto fail;
    int64_t S = mi->image_size, C = mi->channels;
    char n[16];
    snprintf(n, sizeof n, "%d", batch);
    const char *N = eo.dynamic_batch ? "N" : n;
    printf("wrote %s: %s, opset %d, images (%s,%lld,%lld,%lld) %s -> logits and probabilities "
           "(%s,%d)\n",
           c.output, mi->name, eo.opset, N, (long long)(eo.input_nchw ? C : S), (long long)S,
           (long long)(eo.input_nchw ? S : C), eo.input_nchw ? "NCHW" : "NHWC", N, mi->num_classes);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "slimrun export: %s\n", e.msg);
done:
    slim_model_free(m);
    slim_registry_free(reg);
    return rc;
}

const slim_command slim_cmd_export = {"export", "a model and checkpoint as an ONNX model",
                                      export_main};
