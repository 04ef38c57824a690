/* tools/cmd_profile.c - slimrun profile: a few training steps timed per op,
 * and whether the model waits for its input (slim_profile). */
#include "tools/cli.h"

#include <stdio.h>

extern const slim_command slim_cmd_profile;

static const char profile_usage[] =
    "usage: slimrun profile --model_name=NAME (--dataset_dir=DIR | --synthetic) [--steps=N]\n"
    "                       [--warmup=N] [train flags]\n\n"
    "Times a few training steps: per-op forward/backward/update milliseconds and GFLOP/s,\n"
    "the input pipeline's stages, and whether the model waits for its input.";

static void profile_help(void)
{
    printf("  --%-34s %s\n  --%-34s %s\n", "steps", "steps timed (20)", "warmup",
           "steps run first, untimed (3)");
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

static int profile_main(int argc, char **argv)
{
    slim_cli_train_args ta;
    int rc = slim_cli_train_args_parse(&ta, "profile", profile_usage, profile_help, argc, argv, 1,
                                       NULL, 0);
    if (rc >= 0)
        return rc;
    slim_profile_report r;
    slim_error e = {0};
    if (slim_profile(&ta.c, ta.warmup, ta.steps, &r, &e)) {
        fprintf(stderr, "slimrun profile: %s\n", e.msg);
        return 1;
    }
    print_profile(&r);
    slim_profile_report_fini(&r);
    return 0;
}

const slim_command slim_cmd_profile = {
    "profile", "time training steps per op and tell input-bound from compute-bound", profile_main};
