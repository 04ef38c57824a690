/* tools/cmd_import.h - slimrun import, and predict on a .npy tensor. */
#ifndef SLIM_TOOLS_CMD_IMPORT_H
#define SLIM_TOOLS_CMD_IMPORT_H

#include "tools/cmd.h"

typedef struct predict_npy_args {
    const char *model;      /* a model file, an .onnx file or a zoo name */
    const char *checkpoint; /* file or train_dir; NULL for an .onnx model's own weights */
    const char *input, *output;
    int num_classes, image_size, num_threads, use_ema;
    const char *const *plugins;
    int n_plugins;
    const char *const *defines; /* --set NAME=VALUE */
    int n_defines;
    const char *assignment_map; /* --checkpoint_assignment_map */
} predict_npy_args;

/* Logits of X.npy's batch into Y.npy; the process exit code. */
int slim__predict_npy(const predict_npy_args *a);

#endif
