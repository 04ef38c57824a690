/*
 * slim/model.h - models described in YAML (the DSL in dsl/, the zoo in models/).
 *
 *   slim_model_opts o = {.batch_size = 32, .training = true, .weight_decay = -1};
 *   char path[1024];
 *   slim_model_find("resnet_v1_50", path, sizeof path, &err);
 *   slim_model *m;  slim_model_load(reg, path, &o, &m, &err);
 *   slim_graph *g = slim_model_graph(m);     borrowed; compile it as usual
 *   ...
 *   slim_model_free(m);                      frees the graph too
 *
 * The graph built from a model file has:
 *   inputs   "images" (N,H,W,C) f32 and, with opts.training, "labels" (N) i32;
 *   outputs  "logits" (N,num_classes), "predictions" (softmax of logits),
 *            "accuracy" (in_top_k, k=1) and "accuracy_top5" (k=5, when
 *            num_classes >= 5), the last two when labels exist;
 *   the loss "total_loss" (training only) = softmax cross entropy of logits
 *            (+ aux_weight * the auxiliary head's cross entropy; the file's
 *            head: aux_weight, or opts.aux_weight)
 *            + the weight decay terms (TF-Slim's l2_regularizer:
 *            scale * sum(w^2) / 2 per regularized weight),
 *            set with slim_graph_set_loss.
 * Parameter names follow TF-Slim's variable scopes
 * (vgg_16/conv1/conv1_1/weights, .../BatchNorm/moving_mean); batch-norm
 * moving statistics are non-trainable parameters.
 *
 * Errors from a model file carry file:line:col in slim_error.file/line/col
 * and at the start of slim_error.msg.
 */
#ifndef SLIM_MODEL_H
#define SLIM_MODEL_H

#include "slim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct slim_model slim_model;

typedef struct slim_model_opts {
    int batch_size;             /* required, > 0 */
    int num_classes;            /* 0 = the model's default */
    int image_size;             /* 0 = the model's default (height = width) */
    bool training;              /* add labels and the loss; dropout/batch-norm behaviour is
                                 * chosen when the graph is compiled */
    float label_smoothing;      /* TF-Slim --label_smoothing */
    float weight_decay;         /* < 0: the model file's default; 0 disables it */
    const char *const *plugins; /* extra plugin paths (slimrun --plugin), loaded before */
    int n_plugins;              /* the model file's own plugins: */
    const char *const *defines; /* "name=value": override the file's vars: */
    int n_defines;              /* (depth_multiplier=0.5), as if written there */
    /* The weight of the auxiliary head's loss instead of the file's
     * head: aux_weight (TF-Slim's inception uses 0.4), when set_aux_weight. */
    bool set_aux_weight;
    float aux_weight;
    /* Initial values of parameters (an imported model's weights): asked for
     * each parameter the file creates, by full name and shape; values of that
     * shape (copied) make its initializer, NULL keeps the file's. */
    const float *(*param_value)(void *user, const char *name, const slim_shape *shape);
    void *param_value_user;
} slim_model_opts;

/* Parse, expand and build a model file into a new graph over reg (plugins
 * named by the file or the options are loaded into reg). A path ending in
 * .onnx is imported on the fly (an image classifier in ONNX: see README,
 * "ONNX"), its parameters starting at the file's values. */
SLIM_EXPORT slim_status slim_model_load(slim_registry *reg, const char *path,
                                        const slim_model_opts *o, slim_model **out,
                                        slim_error *err);

/* The same from a YAML text in memory; name is used in error positions and
 * includes are resolved relative to the current directory. */
SLIM_EXPORT slim_status slim_model_load_string(slim_registry *reg, const char *name,
                                               const char *text, size_t len,
                                               const slim_model_opts *o, slim_model **out,
                                               slim_error *err);

/* Find a zoo model by name (--model_name): NAME.yaml in the directories of
 * $SLIM_MODEL_PATH (colon separated), then the installed pkgdatadir/models,
 * then the source tree's models/. A name containing '/' or ending in .yaml
 * or .onnx is taken as a path. Fills path (size n). */
SLIM_EXPORT slim_status slim_model_find(const char *name, char *path, size_t n, slim_error *err);

/* The graph (owned by the model). */
SLIM_EXPORT slim_graph *slim_model_graph(slim_model *m);

typedef struct slim_model_info {
    const char *name; /* the model's name: the root variable scope (vgg_16) */
    const char *path; /* the file it was loaded from */
    int image_size;   /* H = W of "images" */
    int channels;     /* C of "images" */
    bool input_nchw;  /* input_layout: NCHW (an imported model): tensors fed from the
                       * command line are (N,C,H,W); "images" is (N,H,W,C) regardless */
    int num_classes;
    int batch_size;
    int64_t n_params;    /* every parameter element, moving statistics included */
    int64_t n_trainable; /* elements of trainable parameters */
    int64_t madds;       /* forward multiply-adds of one example (conv and fc layers) */
    int n_layers;        /* layers built (see slim_model_layer) */
    bool has_aux;        /* an auxiliary head ("aux_logits") exists */
    float aux_weight;
    float weight_decay; /* the scale in effect */
} slim_model_info;

SLIM_EXPORT const slim_model_info *slim_model_get_info(const slim_model *m);

/* One built layer, in build order (for `slimrun inspect`). */
typedef struct slim_model_layer {
    const char *name; /* full scope name (vgg_16/conv1/conv1_1) */
    const char *op;   /* the main op (conv2d, max_pool, ...) */
    slim_tid output;  /* the layer's final output tensor */
    int n_inputs;
    const slim_tid *inputs; /* the layer's input tensors */
    int64_t n_params;       /* parameter elements created by the layer */
    int64_t madds;          /* forward multiply-adds, one example */
    const char *file;       /* where the layer is written */
    int line, col;
} slim_model_layer;

SLIM_EXPORT int slim_model_layer_count(const slim_model *m);
SLIM_EXPORT const slim_model_layer *slim_model_layer_at(const slim_model *m, int i);
/* Forward multiply-adds (one example) of a program step: of the layer it is
 * named after, or summed over the layers a fused step names, joined by " + "
 * (conv2d_chain); 0 for layers that do not count them. */
SLIM_EXPORT int64_t slim_model_step_madds(const slim_model *m, const char *step);

SLIM_EXPORT void slim_model_free(slim_model *m);

#ifdef __cplusplus
}
#endif
#endif /* SLIM_MODEL_H */
