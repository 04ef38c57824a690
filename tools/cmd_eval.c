/* tools/cmd_eval.c - slimrun eval: TF-Slim's eval_image_classifier.py flags
 * over slim_eval. */
#include "tools/cli.h"

#include <stdio.h>
#include <string.h>

extern const slim_command slim_cmd_eval;

typedef struct eval_cli {
    slim_eval_config c;
    const char *use_ema;
    double moving_average_decay;
    bool per_class, confusion;
} eval_cli;

#define E(f) offsetof(eval_cli, c.f)
static const flag_def eval_flags[] = {
    {"checkpoint_path", FLAG_STR, E(checkpoint_path), 0,
     "a checkpoint (slim's, TensorFlow V1 or V2), or a train_dir (its newest)"},
    {"eval_dir", FLAG_STR, E(eval_dir), 0, "write eval.jsonl and TensorBoard events here"},
    {"model_name", FLAG_STR, E(model_name), 0, "zoo model (default: the one the checkpoint names)"},
    {"model", FLAG_STR, E(model_path), 0, "a model file (YAML)"},
    {"plugin", FLAG_LIST, E(plugins), E(n_plugins), "load an op plugin (repeatable)"},
    {"set", FLAG_DEFINES, E(defines), E(n_defines),
     "override a var: of the model file, NAME=VALUE; repeatable (default: the checkpoint's)"},
    {"num_classes", FLAG_INT, E(num_classes), 0, "classes of the head (default: the dataset's)"},
    {"eval_image_size", FLAG_INT, E(eval_image_size), 0,
     "input size (default: the checkpoint's training size, else the model's)"},
    {"dataset_name", FLAG_STR, E(dataset_name), 0, "as for train"},
    {"dataset_dir", FLAG_STR, E(dataset_dir), 0, "where the TFRecord shards are"},
    {"dataset_split_name", FLAG_STR, E(dataset_split_name), 0, "split (default: test/validation)"},
    {"file_pattern", FLAG_STR, E(file_pattern), 0, "shards or image folders instead of a dataset"},
    {"preprocessing_name", FLAG_STR, E(preprocessing_name), 0, "recipe (default: the model's)"},
    {"use_grayscale", FLAG_BOOL, E(use_grayscale), 0,
     "images to gray before the recipe's normalization (as train's)"},
    {"batch_size", FLAG_INT, E(batch_size), 0, "examples per batch (100)"},
    {"max_num_batches", FLAG_I64, E(max_num_batches), 0,
     "evaluate only this many batches (0 = all)"},
    {"labels_offset", FLAG_INT, E(labels_offset), 0, "subtracted from every label (0)"},
    {"num_threads", FLAG_INT, E(num_threads), 0,
     "every thread: model + input (default: the cores)"},
    {"num_preprocessing_threads", FLAG_INT, E(num_preprocessing_threads), 0,
     "input workers (auto)"},
    {"use_ema", FLAG_STR, offsetof(eval_cli, use_ema), 0,
     "moving-average weights: auto (when saved), true, false"},
    {"moving_average_decay", FLAG_DBL, offsetof(eval_cli, moving_average_decay), 0,
     "TF-Slim's: any value means --use_ema=true"},
    {"checkpoint_assignment_map", FLAG_STR, E(checkpoint_assignment_map), 0,
     "CKPT_SCOPE=MODEL_SCOPE,...: where the model's scopes are in the checkpoint"},
    {"watch", FLAG_BOOL, E(watch), 0,
     "evaluate every new checkpoint in --checkpoint_path (a train_dir)"},
    {"eval_interval_secs", FLAG_DBL, E(eval_interval_secs), 0, "how often to look for one (60)"},
    {"timeout", FLAG_DBL, E(timeout_secs), 0,
     "stop watching after this long without a new one (0 = never)"},
    {"per_class", FLAG_BOOL, offsetof(eval_cli, per_class), 0, "print per-class accuracy"},
    {"confusion_matrix", FLAG_BOOL, offsetof(eval_cli, confusion), 0,
     "print the confusion matrix (and per-class accuracy)"},
    {"synthetic", FLAG_BOOL, E(synthetic), 0, "synthetic data (as slimrun train --synthetic)"},
    {"synthetic_examples", FLAG_I64, E(synthetic_examples), 0, ""},
    {"master", FLAG_NOTE, 0, 0, "ignored"},
    {"quantize", FLAG_NOTE_BOOL, 0, 0, "ignored: quantized evaluation is not supported"},
};
#define N_EVAL_FLAGS ((int)(sizeof eval_flags / sizeof eval_flags[0]))

static const char eval_usage[] =
    "usage: slimrun eval --checkpoint_path=PATH --dataset_dir=DIR [FLAGS]\n\n"
    "Evaluates a checkpoint over a split: top-1 (eval/Accuracy), top-5 (eval/Recall_5), loss,\n"
    "and with --per_class / --confusion_matrix the per-class accuracy and confusion matrix.\n"
    "--watch evaluates each new checkpoint of a training run.";

int slim_cli_eval(int argc, char **argv, int first, char **pre, int pre_n)
{
    eval_cli ec;
    memset(&ec, 0, sizeof ec);
    slim_eval_config_init(&ec.c);
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char err[1024];
    if (pre_n && flags_parse(eval_flags, N_EVAL_FLAGS, &ec, pre_n, pre, 0, &fr, err, sizeof err)) {
        slim_cli_error("eval", err);
        return 2;
    }
    if (flags_parse(eval_flags, N_EVAL_FLAGS, &ec, argc, argv, first, &fr, err, sizeof err)) {
        slim_cli_error("eval", err);
        return 2;
    }
    if (fr.help) {
        flags_usage(stdout, eval_usage, eval_flags, N_EVAL_FLAGS);
        return 0;
    }
    if (fr.n_pos) {
        fprintf(stderr, "slimrun eval: unexpected argument '%s'\n", fr.pos[0]);
        return 2;
    }
    slim_cli_print_notes(fr.notes);
    slim_eval_config *c = &ec.c;
    if (ec.use_ema) {
        if (!strcmp(ec.use_ema, "auto"))
            c->use_ema = -1;
        else if (!strcmp(ec.use_ema, "true") || !strcmp(ec.use_ema, "1"))
            c->use_ema = 1;
        else if (!strcmp(ec.use_ema, "false") || !strcmp(ec.use_ema, "0"))
            c->use_ema = 0;
        else {
            slim_cli_errorf("eval", "--use_ema=%s: expected auto, true or false", ec.use_ema);
            return 2;
        }
    } else if (flags_given(&fr, "moving_average_decay")) {
        c->use_ema = 1;
    }
    int detail = ec.confusion ? 2 : ec.per_class ? 1 : 0;
    c->on_message = slim_cli_message;
    c->on_eval = slim_cli_print_eval;
    c->user = &detail;
    c->stop = &slim_cli_stop;
    slim_cli_signals();
    slim_eval_result r;
    slim_error e = {0};
    if (slim_eval(c, &r, &e)) {
        slim_cli_error("eval", e.msg);
        return 1;
    }
    slim_eval_result_fini(&r);
    return 0;
}

static int eval_main(int argc, char **argv)
{
    return slim_cli_eval(argc, argv, 1, NULL, 0);
}

const slim_command slim_cmd_eval = {
    "eval", "evaluate a checkpoint: top-1/top-5, loss, per-class accuracy, confusion", eval_main};
