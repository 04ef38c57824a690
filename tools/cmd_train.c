/* tools/cmd_train.c - slimrun train: TF-Slim's train_image_classifier.py
 * flags over slim_train (slimrun profile and slimrun run parse them too). */
#include "tools/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const slim_command slim_cmd_train;

static void on_progress(const slim_train_progress *p, void *user)
{
    (void)user;
    char eta[32], steps[64];
    slim_cli_duration(eta, sizeof eta, p->eta_seconds);
    if (p->max_steps)
        snprintf(steps, sizeof steps, "%lld/%lld", (long long)p->step, (long long)p->max_steps);
    else
        snprintf(steps, sizeof steps, "%lld", (long long)p->step);
    char norm[48] = "";
    if (!isnan(p->grad_norm))
        snprintf(norm, sizeof norm, "  grad norm %.4g", p->grad_norm);
    char comm[64] = "";
    if (p->processes > 1)
        snprintf(comm, sizeof comm, " (%d processes)  comm wait %.0f%%", p->processes,
                 100 * p->comm_wait);
    char line[600];
    const char *b = slim_cli_sgr(2, "1"), *lo = slim_cli_sgr(2, "1;36"),
               *ac = slim_cli_sgr(2, "1;32"),
               *wt = slim_cli_sgr(2, p->input_wait > 0.2 ? "1;33" : "0"), *o = slim_cli_sgr(2, "0");
    snprintf(
        line, sizeof line,
        "%sstep %s%s  epoch %.2f  loss %s%.4f%s  accuracy %s%.3f%s%s  lr %.4g  %.0f images/s%s  "
        "input wait %s%.0f%%%s  ETA %s",
        b, steps, o, p->epoch, lo, p->loss, o, ac, p->accuracy, o, norm, p->learning_rate,
        p->images_per_sec, comm, wt, 100 * p->input_wait, o, eta);
    slim_cli_status_line(line);
}

/* ---- flags ---------------------------------------------------------------------- */

#define T(f) offsetof(slim_cli_train_args, c.f)
#define NOTE(n, why)                                                                               \
    {                                                                                              \
        n, FLAG_NOTE, 0, 0, why                                                                    \
    }
#define NOTE_BOOL(n, why)                                                                          \
    {                                                                                              \
        n, FLAG_NOTE_BOOL, 0, 0, why                                                               \
    }
#define SECTION(text)                                                                              \
    {                                                                                              \
        "", FLAG_STR, 0, 0, text                                                                   \
    }

static const flag_def train_flags[] = {
    SECTION("model:"),
    {"model_name", FLAG_STR, T(model_name), 0,
     "a zoo model (models/NAME.yaml): lenet, cifarnet, vgg_16, inception_v1, resnet_v1_50, ..."},
    {"model", FLAG_STR, T(model_path), 0, "a model file (YAML) instead of a zoo name"},
    {"plugin", FLAG_LIST, T(plugins), T(n_plugins), "load an op plugin (repeatable)"},
    {"set", FLAG_DEFINES, T(defines), T(n_defines),
     "override a var: of the model file, NAME=VALUE (depth_multiplier=0.5); repeatable"},
    {"num_classes", FLAG_INT, T(num_classes), 0,
     "classes of the head (default: the dataset's - labels_offset)"},
    {"train_image_size", FLAG_INT, T(train_image_size), 0, "input size (default: the model's)"},
    SECTION("data:"),
    {"dataset_name", FLAG_STR, T(dataset_name), 0,
     "mnist, fashion_mnist, cifar10, cifar100, imagenet, flowers, or a converted folder's name"},
    {"dataset_dir", FLAG_STR, T(dataset_dir), 0,
     "where the TFRecord shards are (slimrun convert writes them)"},
    {"dataset_split_name", FLAG_STR, T(dataset_split_name), 0, "split to train on (train)"},
    {"file_pattern", FLAG_STR, T(file_pattern), 0,
     "shards or image folders (globs, comma separated) instead of a dataset"},
    {"preprocessing_name", FLAG_STR, T(preprocessing_name), 0,
     "recipe in models/pipelines (default: the model's)"},
    {"use_grayscale", FLAG_BOOL, T(use_grayscale), 0,
     "images to gray before the recipe's normalization (TF-Slim's; in every channel)"},
    {"batch_size", FLAG_INT, T(batch_size), 0, "examples per step (32)"},
    {"labels_offset", FLAG_INT, T(labels_offset), 0,
     "subtracted from every label (0; 1 for 1000-class ImageNet heads)"},
    {"num_readers", FLAG_INT, T(num_readers), 0, "shards read in parallel (4)"},
    {"num_preprocessing_threads", FLAG_INT, T(num_preprocessing_threads), 0,
     "input workers (default: a share of --num_threads)"},
    {"shuffle_buffer", FLAG_INT, T(shuffle_buffer), 0,
     "examples in the shuffle buffer (default: the pipeline's)"},
    {"synthetic", FLAG_BOOL, T(synthetic), 0,
     "random learnable images instead of a dataset (throughput, tests)"},
    {"synthetic_examples", FLAG_I64, T(synthetic_examples), 0,
     "epoch size of the synthetic data (1024)"},
    {"on_error", FLAG_STR, offsetof(slim_cli_train_args, on_error), 0,
     "a damaged record or image: fail (default: stop, naming it) or skip (counted, reported)"},
    SECTION("run:"),
    {"train_dir", FLAG_STR, T(train_dir), 0,
     "checkpoints, metrics.jsonl and TensorBoard events; a rerun resumes here (required)"},
    {"max_number_of_steps", FLAG_I64, T(max_number_of_steps), 0,
     "stop after this many steps (default: none)"},
    {"num_epochs", FLAG_DBL, T(num_epochs), 0,
     "stop after this many epochs (when no step limit; with neither, until stopped)"},
    {"num_threads", FLAG_INT, T(num_threads), 0,
     "every thread of the run: model + input (default: the cores)"},
    {"seed", FLAG_U64, T(seed), 0, "initial weights, shuffling, augmentation, dropout (0)"},
    SECTION("optimizer:"),
    {"optimizer", FLAG_STR, T(optimizer), 0,
     "adadelta, adagrad, adam, ftrl, momentum, rmsprop, sgd (rmsprop)"},
    {"momentum", FLAG_DBL, T(momentum), 0, "momentum (0.9)"},
    {"use_nesterov", FLAG_BOOL, T(use_nesterov), 0, "Nesterov momentum (false)"},
    {"rmsprop_momentum", FLAG_DBL, T(rmsprop_momentum), 0, "RMSProp momentum (0.9)"},
    {"rmsprop_decay", FLAG_DBL, T(rmsprop_decay), 0, "RMSProp decay (0.9)"},
    {"opt_epsilon", FLAG_DBL, T(opt_epsilon), 0,
     "epsilon of rmsprop, adam, adadelta (1.0, TF-Slim's; Adam's usual is 1e-8)"},
    {"adam_beta1", FLAG_DBL, T(adam_beta1), 0, "Adam first-moment decay (0.9)"},
    {"adam_beta2", FLAG_DBL, T(adam_beta2), 0, "Adam second-moment decay (0.999)"},
    {"adagrad_initial_accumulator_value", FLAG_DBL, T(adagrad_initial_accumulator_value), 0,
     "(0.1)"},
    {"adadelta_rho", FLAG_DBL, T(adadelta_rho), 0, "Adadelta decay (0.95)"},
    {"ftrl_learning_rate_power", FLAG_DBL, T(ftrl_learning_rate_power), 0, "(-0.5)"},
    {"ftrl_initial_accumulator_value", FLAG_DBL, T(ftrl_initial_accumulator_value), 0, "(0.1)"},
    {"ftrl_l1", FLAG_DBL, T(ftrl_l1), 0, "FTRL L1 strength (0)"},
    {"ftrl_l2", FLAG_DBL, T(ftrl_l2), 0, "FTRL L2 strength (0)"},
    {"clip_gradient_norm", FLAG_DBL, T(clip_gradient_norm), 0,
     "clip the gradients to this global L2 norm, all together (0 = off)"},
    SECTION("learning rate:"),
    {"learning_rate", FLAG_DBL, T(learning_rate), 0, "initial learning rate (0.01)"},
    {"learning_rate_decay_type", FLAG_STR, T(learning_rate_decay_type), 0,
     "fixed, exponential, polynomial, cosine (exponential)"},
    {"learning_rate_decay_factor", FLAG_DBL, T(learning_rate_decay_factor), 0,
     "exponential decay factor (0.94)"},
    {"num_epochs_per_decay", FLAG_DBL, T(num_epochs_per_decay), 0, "epochs per decay period (2.0)"},
    {"end_learning_rate", FLAG_DBL, T(end_learning_rate), 0,
     "polynomial end / cosine floor (0.0001)"},
    {"staircase", FLAG_BOOL, T(staircase), 0, "exponential decay in steps (true)"},
    {"warmup_epochs", FLAG_DBL, T(warmup_epochs), 0, "linear warm-up from 0 over these epochs (0)"},
    SECTION("regularization:"),
    {"weight_decay", FLAG_DBL, T(weight_decay), 0,
     "L2 on the weights (0.00004; < 0: the model file's)"},
    {"label_smoothing", FLAG_DBL, T(label_smoothing), 0, "label smoothing (0)"},
    {"aux_loss_weight", FLAG_DBL, T(aux_loss_weight), 0,
     "weight of the auxiliary head's loss (default: the model file's, 0.4 for inception_v3)"},
    {"moving_average_decay", FLAG_DBL, T(moving_average_decay), 0,
     "keep moving averages of the weights, used by eval and predict (off)"},
    SECTION("checkpoints:"),
    {"save_interval_secs", FLAG_DBL, T(save_interval_secs), 0,
     "checkpoint every this many seconds (600)"},
    {"save_interval_steps", FLAG_I64, T(save_interval_steps), 0,
     "and/or every this many steps (0 = by time)"},
    {"max_checkpoints_to_keep", FLAG_INT, T(max_checkpoints_to_keep), 0,
     "newest checkpoints kept (5)"},
    {"save_format", FLAG_STR, T(save_format), 0,
     "slim (model.ckpt-N.slimckpt) or tf (TensorFlow V2: model.ckpt-N.index + .data)"},
    {"checkpoint_path", FLAG_STR, T(checkpoint_path), 0,
     "fine-tune from this checkpoint (slim's, TensorFlow V1 or V2; a file, a V2 prefix, a "
     "directory)"},
    {"checkpoint_exclude_scopes", FLAG_STR, T(checkpoint_exclude_scopes), 0,
     "scopes not restored (comma separated): a new head"},
    {"checkpoint_assignment_map", FLAG_STR, T(checkpoint_assignment_map), 0,
     "CKPT_SCOPE=MODEL_SCOPE,...: where the model's scopes are in the checkpoint"},
    {"trainable_scopes", FLAG_STR, T(trainable_scopes), 0,
     "scopes trained (comma separated); the rest is frozen"},
    {"train_frozen_batch_norm", FLAG_BOOL, T(train_frozen_batch_norm), 0,
     "batch norm outside --trainable_scopes uses batch statistics and updates its moving "
     "averages, as TF-Slim (default: frozen, moving statistics)"},
    {"ignore_missing_vars", FLAG_BOOL, T(ignore_missing_vars), 0,
     "parameters the checkpoint lacks keep their initial values"},
    SECTION("reporting:"),
    {"log_every_n_steps", FLAG_I64, T(log_every_n_steps), 0,
     "progress line, metrics.jsonl and TensorBoard every N steps (10)"},
    {"eval_every_n_steps", FLAG_I64, T(eval_every_n_steps), 0,
     "evaluate on --eval_split_name every N steps (0 = never)"},
    {"eval_split_name", FLAG_STR, T(eval_split_name), 0,
     "split evaluated during training (default: test/validation)"},
    {"plot", FLAG_BOOL, offsetof(slim_cli_train_args, plot), 0,
     "at the end, draw the run into --train_dir/metrics.png (slimrun plot; needs gnuplot)"},
    {"trace", FLAG_STR_BARE, T(trace_path), 0,
     "write a Chrome trace (Perfetto) of the first --trace_steps steps (--trace=FILE.json; "
     "alone: TRAIN_DIR/trace.json)"},
    {"trace_steps", FLAG_INT, T(trace_steps), 0, "steps traced (50)"},
    {"steps", FLAG_INT, offsetof(slim_cli_train_args, steps), 0, ""},
    {"warmup", FLAG_INT, offsetof(slim_cli_train_args, warmup), 0, ""},
    SECTION("across processes:"), /* mpirun; README: Training on several machines */
    {"collective_timeout", FLAG_DBL, T(collective_timeout), 0,
     "seconds to wait for the other processes before stopping with an error (300)"},
    {"allreduce_bucket_mb", FLAG_DBL, T(allreduce_bucket_mb), 0,
     "gradients per allreduce, in MB (8)"},
    {"no_overlap", FLAG_BOOL, T(no_overlap), 0,
     "allreduce the gradients after backward, not during it (measurements)"},
    {"sync_batch_norm", FLAG_BOOL, T(sync_batch_norm), 0,
     "batch norm statistics over the global batch (default: each process's own)"},
    {"replica_check_steps", FLAG_I64, T(replica_check_steps), 0,
     "check every N steps that every process holds the same weights (100; 0 = never)"},
    {"input_sharding", FLAG_STR, T(input_sharding), 0,
     "record (the batches one process would read), file (each its own files) or auto (file "
     "with 8 files per process)"},
    /* TF-Slim's distribution flags: what they become here (a note each) */
    NOTE("num_clones", "clones are processes here: mpirun -np N slimrun train ... trains N "
                       "replicas of --batch_size each, as N clones would; one process uses its "
                       "cores through --num_threads"),
    NOTE_BOOL("clone_on_cpu", "ignored: slim runs on the CPU"),
    NOTE("worker_replicas", "the workers are mpirun's processes (mpirun -np N --host a,b,...); "
                            "slim counts them itself"),
    NOTE("num_ps_tasks", "no parameter servers: every process holds the whole model and the "
                         "gradients are averaged by allreduce"),
    NOTE("task", "each process's rank comes from mpirun; rank 0 is the chief (checkpoints, "
                 "summaries, the console)"),
    NOTE("master", "no master to name: mpirun starts and connects the processes"),
    NOTE_BOOL("sync_replicas", "training across processes is always synchronous: every step "
                               "averages the gradients of all of them"),
    NOTE("replicas_to_aggregate", "every process's gradients count at every step (no backup "
                                  "workers)"),
    NOTE("save_summaries_secs", "ignored: the summaries (TensorBoard events, metrics.jsonl) are "
                                "written every --log_every_n_steps"),
    NOTE("quantize_delay", "ignored: quantized training is not supported"),
};
#define N_TRAIN_FLAGS ((int)(sizeof train_flags / sizeof train_flags[0]))

static const char train_usage[] =
    "usage: slimrun train --model_name=NAME --dataset_dir=DIR --train_dir=DIR [FLAGS]\n\n"
    "Trains an image classifier with TF-Slim's train_image_classifier.py flags. Rerunning the\n"
    "same command resumes from the newest checkpoint in --train_dir. Ctrl-C (or SIGTERM)\n"
    "stops after the current step with a checkpoint.";

/* SLIM_TEST_CRASH_AFTER_STEP=N kills the process right after step N (crash
 * tests); SLIM_TEST_STOP_AFTER_STEP=N sends it SIGTERM there (graceful stop);
 * SLIM_TEST_HANG_AFTER_STEP=N stops it (SIGSTOP: a process that hangs);
 * SLIM_TEST_SLOW_AFTER_STEP=N:S sleeps S seconds there (a straggler);
 * SLIM_TEST_RANK=R: only in the process of that rank (under mpirun). */
static int64_t crash_after = -1, stop_after = -1, hang_after = -1, slow_after = -1;
static unsigned slow_secs;

static void on_step(int64_t step, void *user)
{
    (void)user;
    slim_cli_last_step = step;
    if (step == crash_after)
        raise(SIGKILL);
    if (step == stop_after)
        raise(SIGTERM);
    if (step == hang_after)
        raise(SIGSTOP);
    if (step == slow_after)
        sleep(slow_secs);
}

int slim_cli_train_args_parse(slim_cli_train_args *ta, const char *cmd, const char *usage,
                              void (*more_help)(void), int argc, char **argv, int first, char **pre,
                              int pre_n)
{
    memset(ta, 0, sizeof *ta);
    slim_train_config_init(&ta->c);
    ta->steps = 20;
    ta->warmup = 3;
    flags_result *fr = &ta->flags;
    char err[1024];
    if (pre_n && flags_parse(train_flags, N_TRAIN_FLAGS, ta, pre_n, pre, 0, fr, err, sizeof err)) {
        slim_cli_error(cmd, err); /* FILE:LINE:COL: ... */
        return 2;
    }
    if (flags_parse(train_flags, N_TRAIN_FLAGS, ta, argc, argv, first, fr, err, sizeof err)) {
        slim_cli_error(cmd, err);
        return 2;
    }
    if (fr->help) {
        flags_usage(stdout, usage, train_flags, N_TRAIN_FLAGS);
        if (more_help)
            more_help();
        return 0;
    }
    if (fr->n_pos) {
        fprintf(stderr, "slimrun %s: unexpected argument '%s' (flags are --name=value)\n", cmd,
                fr->pos[0]);
        return 2;
    }
    int n_proc, rank = slim_dist_launcher_rank(&n_proc);
    if (fr->notes[0] && rank <= 0) {
        slim_cli_print_notes(fr->notes);
        fprintf(stderr, "note: this run has %d process%s%s\n", n_proc, n_proc > 1 ? "es" : "",
                n_proc > 1 ? "" : " (mpirun -np N starts N; README: Training on several machines)");
    }
    slim_train_config *c = &ta->c;
    if (c->trace_path && !c->trace_path[0]) { /* --trace alone */
        if (!c->train_dir) {
            slim_cli_error(cmd, "--trace alone writes TRAIN_DIR/trace.json: give --train_dir or "
                                "--trace=FILE.json");
            return 2;
        }
        snprintf(ta->trace_path, sizeof ta->trace_path, "%s/trace.json", c->train_dir);
        c->trace_path = ta->trace_path;
    }
    if (ta->on_error && strcmp(ta->on_error, "fail") && strcmp(ta->on_error, "skip")) {
        slim_cli_errorf(cmd, "--on_error=%s: expected fail or skip", ta->on_error);
        return 2;
    }
    c->skip_damaged = ta->on_error && !strcmp(ta->on_error, "skip");
    c->run_config = fr->settings;
    c->on_message = slim_cli_message;
    c->on_progress = on_progress;
    c->on_eval = slim_cli_print_eval;
    c->user = &ta->eval_detail;
    c->stop = &slim_cli_stop;
    c->on_step = on_step;
    const char *ca = getenv("SLIM_TEST_CRASH_AFTER_STEP"),
               *sa = getenv("SLIM_TEST_STOP_AFTER_STEP"), *tr = getenv("SLIM_TEST_RANK");
    if (!tr || atoi(tr) == (rank < 0 ? 0 : rank)) {
        const char *ha = getenv("SLIM_TEST_HANG_AFTER_STEP"),
                   *sl = getenv("SLIM_TEST_SLOW_AFTER_STEP"); /* "N:SECONDS" */
        crash_after = ca ? atoll(ca) : -1;
        stop_after = sa ? atoll(sa) : -1;
        hang_after = ha ? atoll(ha) : -1;
        if (sl && strchr(sl, ':')) {
            slow_after = atoll(sl);
            slow_secs = (unsigned)atoi(strchr(sl, ':') + 1);
        }
    }
    slim_cli_signals();
    return -1;
}

int slim_cli_train(int argc, char **argv, int first, char **pre, int pre_n,
                   slim_train_config *out_cfg)
{
    slim_cli_train_args ta;
    int rc =
        slim_cli_train_args_parse(&ta, "train", train_usage, NULL, argc, argv, first, pre, pre_n);
    if (rc >= 0)
        return rc;
    slim_train_config *c = &ta.c;
    if (out_cfg)
        *out_cfg = *c;
    slim_error e = {0};
    slim_train_result res;
    slim_status st = slim_train(c, &res, &e);
    slim_cli_end_line();
    if (res.skipped)
        fprintf(stderr,
                "skipped %lld damaged record%s (--on_error=skip; counted each time read), e.g. "
                "%s\n",
                (long long)res.skipped, res.skipped == 1 ? "" : "s", res.first_skip);
    /* Across processes, the goodbye (skipped after a failure) comes after rank 0's
     * last words: a rank that leaves with a signal's status makes mpirun kill the
     * others, which must not cut rank 0's "stopped at step" line. */
    int n_proc, stop = 128 + (slim_cli_stop ? slim_cli_stop : SIGINT);
    if (st) {
        slim_cli_error("train", e.msg);
        slim_dist_finalize();
        return 1;
    }
    if (slim_dist_launcher_rank(&n_proc) > 0) { /* rank 0 says how it went */
        slim_dist_finalize();
        return res.interrupted ? stop : 0;
    }
    if (res.interrupted) {
        fprintf(stderr, "stopped at step %lld; %s. Run the same command again to resume.\n",
                (long long)res.global_step,
                res.last_checkpoint[0] ? "checkpoint saved" : "no checkpoint");
        slim_dist_finalize();
        return stop;
    }
    slim_dist_finalize();
    char d[32];
    slim_cli_duration(d, sizeof d, res.seconds);
    fprintf(stderr, "trained to step %lld in %s (%.0f images/s); final loss %.4f; checkpoint %s\n",
            (long long)res.global_step, d, res.images_per_sec, res.final_loss,
            res.last_checkpoint[0] ? res.last_checkpoint : "(none new)");
    if (ta.plot && c->train_dir) { /* a picture failing is a warning: the run is done */
        char out[4200], perr[1024];
        if (slim_cli_plot_train_dir(c->train_dir, out, sizeof out, perr, sizeof perr))
            slim_cli_message(SLIM_LOG_WARN, perr, NULL);
        else
            fprintf(stderr, "plot: %s\n", out);
    }
    return 0;
}

static int train_main(int argc, char **argv)
{
    return slim_cli_train(argc, argv, 1, NULL, 0, NULL);
}

const slim_command slim_cmd_train = {"train", "train an image classifier (TF-Slim's flags)",
                                     train_main};
