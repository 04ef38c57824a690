/* tools/cmd_run.c - slimrun run: the train or eval command a YAML run file
 * describes, then optionally an evaluation of what was trained. */
#include "tools/cli.h"

#include <stdio.h>
#include <string.h>

extern const slim_command slim_cmd_run;

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
        rc = slim_cli_train(argc, argv, 2, rf.argv, rf.argc, &c);
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
        fprintf(stderr, "slimrun run: %s: command '%s': expected train or eval\n", rf.command_where,
                command);
        rc = 2;
    }
    runfile_free(&rf);
    return rc;
}

const slim_command slim_cmd_run = {"run", "run a YAML run file (train, then evaluate)", run_main};
