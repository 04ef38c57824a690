/* tools/cmd_predict.c - slimrun predict: the top-k labels of image files
 * from a model and a checkpoint. */
#include "tools/cli.h"
#include "tools/cmd_import.h"

#include "core/file.h"

#include <slim/data.h>
#include <slim/model.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern const slim_command slim_cmd_predict;

typedef struct predict_cli {
    int top_k, num_classes, image_size, num_threads, labels_offset;
    const char *labels, *preprocessing_name, *use_ema, *assignment_map;
    const char *const *plugins;
    int n_plugins;
    const char *const *defines;
    int n_defines;
    const char *model, *model_name, *checkpoint_path, *input_npy, *output_npy;
} predict_cli;

#define P(f) offsetof(predict_cli, f)
static const flag_def predict_flags[] = {
    {"top_k", FLAG_INT, P(top_k), 0, "labels shown per image (5)"},
    {"labels", FLAG_STR, P(labels), 0, "labels.txt (default: next to the checkpoint)"},
    {"num_classes", FLAG_INT, P(num_classes), 0, "classes of the head (default: the checkpoint's)"},
    {"image_size", FLAG_INT, P(image_size), 0,
     "input size (default: the checkpoint's training size, else the model's)"},
    {"preprocessing_name", FLAG_STR, P(preprocessing_name), 0, "recipe (default: the model's)"},
    {"labels_offset", FLAG_INT, P(labels_offset), 0,
     "added to class indices to look up labels.txt"},
    {"num_threads", FLAG_INT, P(num_threads), 0, "threads (default: the cores)"},
    {"use_ema", FLAG_STR, P(use_ema), 0, "moving-average weights: auto, true, false"},
    {"checkpoint_assignment_map", FLAG_STR, P(assignment_map), 0,
     "CKPT_SCOPE=MODEL_SCOPE,...: where the model's scopes are in the checkpoint"},
    {"plugin", FLAG_LIST, P(plugins), P(n_plugins), "load an op plugin (repeatable)"},
    {"set", FLAG_DEFINES, P(defines), P(n_defines),
     "override a var: of the model file, NAME=VALUE; repeatable (default: the checkpoint's)"},
    {"input_npy", FLAG_STR, P(input_npy), 0,
     "predict on a NumPy float32 batch instead of image files (N,H,W,C, or N,C,H,W for a model "
     "with input_layout: NCHW)"},
    {"output_npy", FLAG_STR, P(output_npy), 0, "with --input_npy: write the logits here"},
    {"model", FLAG_STR, P(model), 0, "with --input_npy: a model file, or an .onnx file"},
    {"model_name", FLAG_STR, P(model_name), 0, "with --input_npy: a zoo model"},
    {"checkpoint_path", FLAG_STR, P(checkpoint_path), 0,
     "with --input_npy: a checkpoint file or a train_dir"},
};
#define N_PREDICT_FLAGS ((int)(sizeof predict_flags / sizeof predict_flags[0]))

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* A checkpoint rather than a model: a directory (a train_dir), a .slimckpt
 * file or a TensorFlow checkpoint's .index (model files are YAML; zoo names
 * have no extension). */
static bool is_checkpoint(const char *p)
{
    struct stat sb;
    size_t l = strlen(p);
    return (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) ||
           (l > 9 && !strcmp(p + l - 9, ".slimckpt")) || (l > 6 && !strcmp(p + l - 6, ".index"));
}

static int predict_main(int argc, char **argv)
{
    predict_cli pc = {.top_k = 5};
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char err[1024];
    if (flags_parse(predict_flags, N_PREDICT_FLAGS, &pc, argc, argv, 1, &fr, err, sizeof err)) {
        fprintf(stderr, "slimrun predict: %s\n", err);
        return 2;
    }
    if (!fr.help && (pc.input_npy || pc.output_npy)) {
        if (!pc.input_npy || !pc.output_npy || fr.n_pos) {
            fprintf(stderr, "slimrun predict: --input_npy and --output_npy go together, with "
                            "--model and --checkpoint_path instead of positional arguments\n");
            return 2;
        }
        predict_npy_args a = {.model = pc.model ? pc.model : pc.model_name,
                              .checkpoint = pc.checkpoint_path,
                              .input = pc.input_npy,
                              .output = pc.output_npy,
                              .num_classes = pc.num_classes,
                              .image_size = pc.image_size,
                              .num_threads = pc.num_threads,
                              .use_ema = pc.use_ema && !strcmp(pc.use_ema, "false")  ? 0
                                         : pc.use_ema && !strcmp(pc.use_ema, "true") ? 1
                                                                                     : -1,
                              .plugins = pc.plugins,
                              .n_plugins = pc.n_plugins,
                              .defines = pc.defines,
                              .n_defines = pc.n_defines,
                              .assignment_map = pc.assignment_map};
        return slim__predict_npy(&a);
    }
    /* MODEL may be left out when the checkpoint names it (as eval finds it) */
    bool no_model = fr.n_pos >= 2 && is_checkpoint(fr.pos[0]);
    if (fr.help || fr.n_pos < (no_model ? 2 : 3)) {
        flags_usage(fr.help ? stdout : stderr,
                    "usage: slimrun predict [MODEL] CHECKPOINT IMAGE... [FLAGS]\n"
                    "       slimrun predict --model=MODEL [--checkpoint_path=CKPT] "
                    "--input_npy=X.npy --output_npy=Y.npy\n\n"
                    "Top-k classes of each image (JPEG or PNG) with their probabilities. MODEL is\n"
                    "a zoo name or a model file (default: the one the checkpoint names);\n"
                    "CHECKPOINT a checkpoint file or a train_dir.\n"
                    "With --input_npy: the logits of a float32 batch as a NumPy file (an .onnx\n"
                    "model needs no checkpoint).",
                    predict_flags, N_PREDICT_FLAGS);
        return fr.help ? 0 : 2;
    }
    const char *model = no_model ? NULL : fr.pos[0], *ckpt_arg = fr.pos[no_model ? 0 : 1];
    int first_image = no_model ? 1 : 2;
    slim_error e = {0};
    char ckpt[1024];
    struct stat sb;
    if (stat(ckpt_arg, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (slim_checkpoint_latest(ckpt_arg, ckpt, sizeof ckpt, NULL, 0, &e)) {
            fprintf(stderr, "slimrun predict: %s\n", e.msg);
            return 1;
        }
    } else {
        snprintf(ckpt, sizeof ckpt, "%s", ckpt_arg);
    }
    slim_checkpoint_info info;
    if (slim_checkpoint_verify(ckpt, &info, &e)) {
        fprintf(stderr, "slimrun predict: %s\n", e.msg);
        return 1;
    }
    int classes = pc.num_classes ? pc.num_classes : info.num_classes;
    slim_cli_trained tr;
    if (!slim_cli_as_trained(&info, model, pc.defines, pc.n_defines, &tr)) {
        fprintf(stderr,
                "slimrun predict: %s does not name its model: give the model first "
                "(slimrun predict MODEL CHECKPOINT IMAGE...)\n",
                ckpt);
        return 2;
    }
    /* the model as trained: its --set overrides (when the same model) */
    model = tr.model;
    const char *const *defines = tr.defines;
    int n_defines = tr.n_defines;
    /* labels: --labels, else labels.txt beside the checkpoint */
    char **names = NULL;
    int n_names = 0;
    char lpath[1100];
    if (pc.labels)
        snprintf(lpath, sizeof lpath, "%s", pc.labels);
    else {
        snprintf(lpath, sizeof lpath, "%s", ckpt);
        char *slash = strrchr(lpath, '/');
        snprintf(slash ? slash + 1 : lpath, sizeof lpath - (size_t)(slash ? slash + 1 - lpath : 0),
                 "labels.txt");
    }
    if ((pc.labels || exists(lpath)) && slim_labels_read(lpath, &names, &n_names, &e)) {
        fprintf(stderr, "slimrun predict: %s\n", e.msg);
        return 1;
    }
    slim_registry *reg = NULL;
    slim_model *m = NULL;
    slim_program *p = NULL;
    slim_preprocessor *pp = NULL;
    float *probs = NULL;
    int rc = 1;
    char path[1024];
    slim_model_opts mo = {.batch_size = 1,
                          .num_classes = classes,
                          .image_size = pc.image_size ? pc.image_size : info.image_size,
                          .plugins = pc.plugins,
                          .n_plugins = pc.n_plugins,
                          .defines = defines,
                          .n_defines = n_defines};
    if (slim_registry_new(&reg, &e) || slim_model_find(model, path, sizeof path, &e) ||
        slim_model_load(reg, path, &mo, &m, &e))
        goto fail;
    const slim_model_info *mi = slim_model_get_info(m);
    slim_compile_opts co = {.training = false, .num_threads = pc.num_threads};
    if (slim_graph_compile(slim_model_graph(m), &co, &p, &e))
        goto fail;
    slim_restore_opts ro = {.use_ema = pc.use_ema && !strcmp(pc.use_ema, "false")  ? 0
                                       : pc.use_ema && !strcmp(pc.use_ema, "true") ? 1
                                                                                   : -1};
    ro.assignment_map = pc.assignment_map;
    if (slim_checkpoint_restore(ckpt, slim_model_graph(m), &ro, NULL, &e))
        goto fail;
    slim_pipeline_opts po = {.recipe = pc.preprocessing_name ? pc.preprocessing_name
                                                             : slim_recipe_for_model(mi->name),
                             .is_training = false,
                             .batch_size = 1,
                             .image_size = mi->image_size,
                             .channels = mi->channels};
    if (slim_preprocessor_new(&po, &pp, &e))
        goto fail;
    int K = mi->num_classes, k = pc.top_k < K ? pc.top_k : K;
    probs = malloc((size_t)K * sizeof *probs);
    rc = 0;
    for (int i = first_image; i < fr.n_pos; i++) {
        size_t len;
        uint8_t *data;
        if (slim__file_read(fr.pos[i], "image", 0, &data, &len, &e)) {
            fprintf(stderr, "slimrun predict: %s\n", e.msg);
            rc = 1;
            continue;
        }
        slim_tensor x, lg;
        if (slim_program_input(p, "images", &x, &e) ||
            slim_preprocessor_run(pp, data, len, fr.pos[i], 0, 0, x.data, &e) ||
            slim_program_run(p, NULL, &e) || slim_program_output(p, "logits", &lg, &e)) {
            fprintf(stderr, "slimrun predict: %s: %s\n", fr.pos[i], e.msg);
            free(data);
            rc = 1;
            continue;
        }
        free(data);
        const float *l = lg.data;
        float mx = l[0];
        for (int j = 1; j < K; j++)
            mx = l[j] > mx ? l[j] : mx;
        double s = 0;
        for (int j = 0; j < K; j++)
            s += exp((double)l[j] - mx);
        for (int j = 0; j < K; j++)
            probs[j] = (float)(exp((double)l[j] - mx) / s);
        printf("%s:\n", fr.pos[i]);
        bool *used = calloc((size_t)K, 1);
        for (int r = 0; r < k && used; r++) {
            int best = -1;
            for (int j = 0; j < K; j++)
                if (!used[j] && (best < 0 || probs[j] > probs[best]))
                    best = j;
            used[best] = true;
            int li = best + pc.labels_offset;
            const char *nm = names && li >= 0 && li < n_names && names[li] ? names[li] : NULL;
            printf("  %d. %-30s %6.2f%%  (class %d)\n", r + 1, nm ? nm : "", 100 * probs[best],
                   best);
        }
        free(used);
    }
    goto done;
fail:
    slim_cli_error("predict", e.msg);
    rc = 1;
done:
    free(probs);
    slim_preprocessor_free(pp);
    slim_program_free(p);
    slim_model_free(m);
    slim_registry_free(reg);
    if (names)
        slim_labels_free(names, n_names);
    return rc;
}

const slim_command slim_cmd_predict = {"predict", "top-k labels of image files", predict_main};
