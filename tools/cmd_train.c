/* tools/cmd_train.c - slimrun train, run and profile: TF-Slim's
 * train_image_classifier.py flags over slim_train / slim_profile. */
#include "tools/cmd_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const slim_command slim_cmd_train, slim_cmd_run, slim_cmd_profile;

/* ---- signals ------------------------------------------------------------------ */

volatile int slim_cli_stop;

static void on_signal(int sig)
{
    if (slim_cli_stop) { /* a second one: leave now */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    slim_cli_stop = sig;
    static const char msg[] = "\nslimrun: stopping after this step (a checkpoint is saved); "
                              "send the signal again to quit at once\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

void slim_cli_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* over a file-size limit, writes fail with EFBIG (reported, the previous
     * checkpoint kept) instead of the process being killed */
    signal(SIGXFSZ, SIG_IGN);
}

/* ---- output ------------------------------------------------------------------- */

static bool tty_line; /* a progress line without its newline is on stderr */

void slim_cli_message(int level, const char *msg, void *user)
{
    (void)user;
    if (tty_line) {
        fputc('\n', stderr);
        tty_line = false;
    }
    fprintf(stderr, "%s%s\n",
            level == SLIM_LOG_WARN    ? "warning: "
            : level == SLIM_LOG_ERROR ? "error: "
                                      : "",
            msg);
}

static void fmt_duration(double s, char *buf, size_t n)
{
    if (s < 0) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

static void on_progress(const slim_train_progress *p, void *user)
{
    (void)user;
    bool tty = isatty(2);
    char eta[32], steps[64];
    fmt_duration(p->eta_seconds, eta, sizeof eta);
    if (p->max_steps)
        snprintf(steps, sizeof steps, "%lld/%lld", (long long)p->step, (long long)p->max_steps);
    else
        snprintf(steps, sizeof steps, "%lld", (long long)p->step);
    char norm[48] = "";
    if (!isnan(p->grad_norm))
        snprintf(norm, sizeof norm, "  grad norm %.4g", p->grad_norm);
    fprintf(stderr,
            "%sstep %s  epoch %.2f  loss %.4f  accuracy %.3f%s  lr %.4g  %.0f images/s  "
            "input wait %.0f%%  ETA %s%s",
            tty ? "\r" : "", steps, p->epoch, p->loss, p->accuracy, norm, p->learning_rate,
            p->images_per_sec, 100 * p->input_wait, eta, tty ? "\033[K" : "\n");
    tty_line = tty;
    fflush(stderr);
}

void slim_cli_print_eval(const slim_eval_result *r, void *user)
{
    int detail = user ? *(const int *)user : 0;
    if (tty_line) {
        fputc('\n', stderr);
        tty_line = false;
    }
    if (r->global_step >= 0)
        printf("step %lld: ", (long long)r->global_step);
    printf("eval/Accuracy %.4f  eval/Recall_5 %.4f  loss %.4f  (%lld images, %.1f s%s)\n", r->top1,
           r->top5, r->loss, (long long)r->n_examples, r->seconds,
           r->used_ema ? ", moving averages" : "");
    if (detail >= 1 && r->class_total) {
        printf("per-class accuracy:\n");
        for (int k = 0; k < r->num_classes; k++) {
            const char *nm = r->label_names && r->label_names[k] ? r->label_names[k] : NULL;
            if (!r->class_total[k])
                continue;
            printf("  %4d %-24s %6.2f%%  (%lld/%lld)\n", k, nm ? nm : "",
                   100.0 * (double)r->class_correct[k] / (double)r->class_total[k],
                   (long long)r->class_correct[k], (long long)r->class_total[k]);
        }
    }
    if (detail >= 2 && r->confusion && r->num_classes <= 100) {
        int K = r->num_classes;
        printf("confusion matrix (rows: true class, columns: predicted):\n      ");
        for (int j = 0; j < K; j++)
            printf("%6d", j);
        printf("\n");
        for (int i = 0; i < K; i++) {
            printf("%6d", i);
            for (int j = 0; j < K; j++)
                printf("%6lld", (long long)r->confusion[(size_t)i * (size_t)K + (size_t)j]);
            printf("\n");
        }
    }
    fflush(stdout);
}

/* ---- flags ---------------------------------------------------------------------- */

typedef struct train_cli {
    slim_train_config c;
    int steps, warmup; /* profile */
    int eval_detail;
} train_cli;

#define T(f) offsetof(train_cli, c.f)
#define NOTE(n, why)                                                                               \
    {                                                                                              \
        n, FLAG_NOTE, 0, 0, why                                                                    \
    }
#define SECTION(text)                                                                              \
    {                                                                                              \
        "", FLAG_STR, 0, 0, text                                                                   \
    }

static const flag_def train_flags[] = {
    SECTION("model:"),
    {"model_name", FLAG_STR, T(model_name), 0,
     "a zoo model (models/NAME.yaml): lenet, vgg_16, resnet_v1_50, ..."},
    {"model", FLAG_STR, T(model_path), 0, "a model file (YAML) instead of a zoo name"},
    {"plugin", FLAG_LIST, T(plugins), T(n_plugins), "load an op plugin (repeatable)"},
    {"num_classes", FLAG_INT, T(num_classes), 0,
     "classes of the head (default: the dataset's - labels_offset)"},
    {"train_image_size", FLAG_INT, T(train_image_size), 0, "input size (default: the model's)"},
    SECTION("data:"),
    {"dataset_name", FLAG_STR, T(dataset_name), 0,
     "mnist, fashion_mnist, cifar10, imagenet, flowers, ... or a folder's"},
    {"dataset_dir", FLAG_STR, T(dataset_dir), 0,
     "where the TFRecord shards are (slimrun convert writes them)"},
    {"dataset_split_name", FLAG_STR, T(dataset_split_name), 0, "split to train on (train)"},
    {"file_pattern", FLAG_STR, T(file_pattern), 0,
     "shards or image folders (globs, comma separated) instead of a dataset"},
    {"preprocessing_name", FLAG_STR, T(preprocessing_name), 0,
     "recipe in models/pipelines (default: the model's)"},
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
    SECTION("run:"),
    {"train_dir", FLAG_STR, T(train_dir), 0,
     "checkpoints, metrics.jsonl and TensorBoard events; a rerun resumes here"},
    {"max_number_of_steps", FLAG_I64, T(max_number_of_steps), 0,
     "stop after this many steps (default: none)"},
    {"num_epochs", FLAG_DBL, T(num_epochs), 0, "stop after this many epochs (when no step limit)"},
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
    {"opt_epsilon", FLAG_DBL, T(opt_epsilon), 0, "epsilon of rmsprop, adam, adadelta (1.0)"},
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
     "keep moving averages of the weights, used by eval (off)"},
    SECTION("checkpoints:"),
    {"save_interval_secs", FLAG_DBL, T(save_interval_secs), 0,
     "checkpoint every this many seconds (600)"},
    {"save_interval_steps", FLAG_I64, T(save_interval_steps), 0,
     "and/or every this many steps (0 = by time)"},
    {"max_checkpoints_to_keep", FLAG_INT, T(max_checkpoints_to_keep), 0,
     "newest checkpoints kept (5)"},
    {"checkpoint_path", FLAG_STR, T(checkpoint_path), 0,
     "fine-tune from this checkpoint (file or directory)"},
    {"checkpoint_exclude_scopes", FLAG_STR, T(checkpoint_exclude_scopes), 0,
     "scopes not restored (comma separated): a new head"},
    {"trainable_scopes", FLAG_STR, T(trainable_scopes), 0,
     "scopes trained (comma separated); the rest is frozen"},
    {"ignore_missing_vars", FLAG_BOOL, T(ignore_missing_vars), 0,
     "parameters the checkpoint lacks keep their initial values"},
    SECTION("reporting:"),
    {"log_every_n_steps", FLAG_I64, T(log_every_n_steps), 0,
     "progress line, metrics.jsonl and TensorBoard every N steps (10)"},
    {"eval_every_n_steps", FLAG_I64, T(eval_every_n_steps), 0,
     "evaluate on --eval_split_name every N steps (0 = never)"},
    {"eval_split_name", FLAG_STR, T(eval_split_name), 0,
     "split evaluated during training (default: test/validation)"},
    {"trace", FLAG_STR, T(trace_path), 0,
     "write a Chrome trace (Perfetto) of the first --trace_steps steps"},
    {"trace_steps", FLAG_INT, T(trace_steps), 0, "steps traced (50)"},
    {"save_summaries_secs", FLAG_DBL, T(save_summaries_secs), 0, ""},
    {"steps", FLAG_INT, offsetof(train_cli, steps), 0, ""},
    {"warmup", FLAG_INT, offsetof(train_cli, warmup), 0, ""},
    NOTE("num_clones", "ignored: one process uses every core through --num_threads"),
    NOTE("clone_on_cpu", "ignored: slim runs on the CPU"),
    NOTE("worker_replicas", "ignored: distributed training is not built in yet"),
    NOTE("num_ps_tasks", "ignored: distributed training is not built in yet"),
    NOTE("task", "ignored: distributed training is not built in yet"),
    NOTE("master", "ignored: distributed training is not built in yet"),
    NOTE("sync_replicas", "ignored: distributed training is not built in yet"),
    NOTE("replicas_to_aggregate", "ignored: distributed training is not built in yet"),
    NOTE("quantize_delay", "ignored: quantized training is not supported"),
};
#define N_TRAIN_FLAGS ((int)(sizeof train_flags / sizeof train_flags[0]))

static const char train_usage[] =
    "usage: slimrun train --model_name=NAME --dataset_dir=DIR --train_dir=DIR [FLAGS]\n\n"
    "Trains an image classifier with TF-Slim's train_image_classifier.py flags. Rerunning the\n"
    "same command resumes from the newest checkpoint in --train_dir. Ctrl-C (or SIGTERM)\n"
    "stops after the current step with a checkpoint.";

static const char profile_usage[] =
    "usage: slimrun profile --model_name=NAME (--dataset_dir=DIR | --synthetic) [--steps=N]\n"
    "                       [--warmup=N] [train flags]\n\n"
    "Times a few training steps: per-op forward/backward/update milliseconds and GFLOP/s,\n"
    "the input pipeline's stages, and whether the model waits for its input.";

/* SLIM_TEST_CRASH_AFTER_STEP=N kills the process right after step N (crash
 * tests); SLIM_TEST_STOP_AFTER_STEP=N sends it SIGTERM there (graceful stop). */
static int64_t crash_after = -1, stop_after = -1;

static void on_step(int64_t step, void *user)
{
    (void)user;
    if (step == crash_after)
        raise(SIGKILL);
    if (step == stop_after)
        raise(SIGTERM);
}

static void print_profile(const slim_profile_report *r)
{
    static const char *const phases[] = {"forward", "backward", "update", "grad-sum"};
    printf("profile: %d steps of batch %d, %d model thread%s + %d input worker%s\n", r->steps,
           r->batch_size, r->model_threads, r->model_threads > 1 ? "s" : "", r->input_threads,
           r->input_threads > 1 ? "s" : "");
    printf("step %.2f ms = compute %.2f ms + input wait %.2f ms (%.1f%%); %.0f images/s\n",
           r->step_ms, r->compute_ms, r->wait_ms, 100 * r->wait_fraction, r->images_per_sec);
    printf("compute: forward %.2f ms, backward %.2f ms, update %.2f ms, gradient sums %.2f ms\n\n",
           r->phase_ms[0], r->phase_ms[1], r->phase_ms[2], r->phase_ms[3]);
    printf("%-44s %-22s %-9s %9s %6s %8s\n", "op (slowest first)", "kind", "phase", "ms", "%",
           "GFLOP/s");
    double total = r->phase_ms[0] + r->phase_ms[1] + r->phase_ms[2] + r->phase_ms[3];
    for (int i = 0; i < r->n_ops && i < 30; i++) {
        const slim_profile_op *o = &r->ops[i];
        char gf[32] = "";
        if (o->gflops > 0)
            snprintf(gf, sizeof gf, "%.1f", o->gflops);
        printf("%-44.44s %-22.22s %-9s %9.3f %5.1f%% %8s\n", o->name, o->op,
               o->phase >= 0 && o->phase < 4 ? phases[o->phase] : "?", o->ms,
               total > 0 ? 100 * o->ms / total : 0, gf);
    }
    if (r->n_ops > 30)
        printf("(%d more)\n", r->n_ops - 30);
    bool any = false;
    for (int s = 0; s < 8; s++)
        any |= r->stage_ms[s] > 0;
    if (any) {
        static const char *const stages[] = {"read",  "decode",          "crop", "resize", "color",
                                             "batch", "queue-full wait", "?"};
        printf("\ninput, per image (worker time): ");
        for (int s = 0; s < 7; s++)
            printf("%s%s %.3f ms", s ? ", " : "", stages[s], r->stage_ms[s]);
        printf("\ninput capacity: ~%.0f images/s with %d worker%s\n", r->input_images_per_sec,
               r->input_threads, r->input_threads > 1 ? "s" : "");
    }
    printf("\nverdict: %s\n", r->verdict);
}

int slim_cli_train(int argc, char **argv, int first, char **pre, int pre_n, bool profile,
                   slim_train_config *out_cfg)
{
    train_cli tc;
    memset(&tc, 0, sizeof tc);
    slim_train_config_init(&tc.c);
    tc.steps = 20;
    tc.warmup = 3;
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char err[1024];
    const char *cmd = profile ? "profile" : "train";
    if (pre_n &&
        flags_parse(train_flags, N_TRAIN_FLAGS, &tc, pre_n, pre, 0, &fr, err, sizeof err)) {
        fprintf(stderr, "slimrun %s: run file: %s\n", cmd, err);
        return 2;
    }
    if (flags_parse(train_flags, N_TRAIN_FLAGS, &tc, argc, argv, first, &fr, err, sizeof err)) {
        fprintf(stderr, "slimrun %s: %s\n", cmd, err);
        return 2;
    }
    if (fr.help) {
        flags_usage(stdout, profile ? profile_usage : train_usage, train_flags, N_TRAIN_FLAGS);
        if (profile)
            printf("  --%-34s %s\n  --%-34s %s\n", "steps", "steps timed (20)", "warmup",
                   "steps run first, untimed (3)");
        return 0;
    }
    if (fr.n_pos) {
        fprintf(stderr, "slimrun %s: unexpected argument '%s' (flags are --name=value)\n", cmd,
                fr.pos[0]);
        return 2;
    }
    if (fr.notes[0])
        fprintf(stderr, "note: %s\n", fr.notes);
    slim_train_config *c = &tc.c;
    c->run_config = fr.settings;
    c->on_message = slim_cli_message;
    c->on_progress = on_progress;
    c->on_eval = slim_cli_print_eval;
    c->user = &tc.eval_detail;
    c->stop = &slim_cli_stop;
    c->on_step = on_step;
    const char *ca = getenv("SLIM_TEST_CRASH_AFTER_STEP"),
               *sa = getenv("SLIM_TEST_STOP_AFTER_STEP");
    crash_after = ca ? atoll(ca) : -1;
    stop_after = sa ? atoll(sa) : -1;
    if (out_cfg)
        *out_cfg = *c;
    slim_cli_signals();
    slim_error e = {0};
    if (profile) {
        slim_profile_report r;
        if (slim_profile(c, tc.warmup, tc.steps, &r, &e)) {
            fprintf(stderr, "slimrun profile: %s\n", e.msg);
            return 1;
        }
        print_profile(&r);
        slim_profile_report_fini(&r);
        return 0;
    }
    slim_train_result res;
    slim_status st = slim_train(c, &res, &e);
    if (tty_line) {
        fputc('\n', stderr);
        tty_line = false;
    }
    if (st) {
        fprintf(stderr, "slimrun train: %s\n", e.msg);
        return 1;
    }
    if (res.interrupted) {
        fprintf(stderr, "stopped at step %lld; %s. Run the same command again to resume.\n",
                (long long)res.global_step,
                res.last_checkpoint[0] ? "checkpoint saved" : "no checkpoint");
        return 128 + (slim_cli_stop ? slim_cli_stop : SIGINT);
    }
    char d[32];
    fmt_duration(res.seconds, d, sizeof d);
    fprintf(stderr, "trained to step %lld in %s (%.0f images/s); final loss %.4f; checkpoint %s\n",
            (long long)res.global_step, d, res.images_per_sec, res.final_loss,
            res.last_checkpoint[0] ? res.last_checkpoint : "(none new)");
    return 0;
}

static int train_main(int argc, char **argv)
{
    return slim_cli_train(argc, argv, 1, NULL, 0, false, NULL);
}

static int profile_main(int argc, char **argv)
{
    return slim_cli_train(argc, argv, 1, NULL, 0, true, NULL);
}

/* ---- run: a YAML run file --------------------------------------------------------- */

static int run_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: slimrun run RUN.yaml [FLAGS]\n\n"
               "Runs the command a YAML file describes: a mapping of flag names to values\n"
               "(those of slimrun train, or of slimrun eval with 'command: eval'), with an\n"
               "optional 'eval:' mapping evaluated after training. Flags on the command line\n"
               "override the file's.\n\n"
               "  model_name: lenet\n  dataset_name: fashion_mnist\n  dataset_dir: /tmp/fmnist\n"
               "  train_dir: /tmp/lenet\n  optimizer: momentum\n  learning_rate: 0.03\n"
               "  eval:\n    dataset_split_name: test\n");
        return argc < 2 ? 2 : 0;
    }
    runfile rf;
    char err[1024];
    int rc = runfile_load(argv[1], &rf, err, sizeof err);
    if (rc) {
        fprintf(stderr, "slimrun run: %s\n", err);
        return 2;
    }
    const char *command = rf.command ? rf.command : "train";
    if (!strcmp(command, "eval")) {
        rc = slim_cli_eval(argc, argv, 2, rf.argv, rf.argc);
    } else if (!strcmp(command, "train")) {
        slim_train_config c;
        rc = slim_cli_train(argc, argv, 2, rf.argv, rf.argc, false, &c);
        if (rc == 0 && rf.has_eval) {
            /* the eval section inherits the model, data and checkpoint */
            char *pre[64];
            int n = 0;
            char buf[6][1100];
            if (c.model_path)
                snprintf(buf[n], sizeof buf[n], "--model=%s", c.model_path), pre[n] = buf[n], n++;
            if (c.model_name)
                snprintf(buf[n], sizeof buf[n], "--model_name=%s", c.model_name), pre[n] = buf[n],
                                                                                  n++;
            if (c.dataset_name)
                snprintf(buf[n], sizeof buf[n], "--dataset_name=%s", c.dataset_name),
                    pre[n] = buf[n], n++;
            if (c.dataset_dir)
                snprintf(buf[n], sizeof buf[n], "--dataset_dir=%s", c.dataset_dir), pre[n] = buf[n],
                                                                                    n++;
            if (c.train_dir)
                snprintf(buf[n], sizeof buf[n], "--checkpoint_path=%s", c.train_dir),
                    pre[n] = buf[n], n++;
            if (c.synthetic)
                snprintf(buf[n], sizeof buf[n], "--synthetic"), pre[n] = buf[n], n++;
            for (int i = 0; i < rf.eval_argc && n < 64; i++)
                pre[n++] = rf.eval_argv[i];
            char *none[] = {argv[0]};
            rc = slim_cli_eval(1, none, 1, pre, n);
        }
    } else {
        fprintf(stderr, "slimrun run: %s: command '%s': expected train or eval\n", argv[1],
                command);
        rc = 2;
    }
    runfile_free(&rf);
    return rc;
}

const slim_command slim_cmd_train = {"train", "train an image classifier (TF-Slim's flags)",
                                     train_main};
const slim_command slim_cmd_profile = {
    "profile", "time training steps per op and tell input-bound from compute-bound", profile_main};
const slim_command slim_cmd_run = {"run", "run a YAML run file (train, then evaluate)", run_main};
