/*
 * tools/slimrun.c - the slimrun command: a thin dispatcher over the library.
 *
 * Each subcommand lives in its own tools/cmd_*.c file and defines a
 * slim_command; commands not built into this binary are simply absent.
 * Only slimrun prints and exits: the library returns statuses.
 */
#include "tools/cmd.h"

#include <stdio.h>
#include <string.h>

/* Weak: a command whose file is not part of this build is NULL here. */
#define SLIM_CMD(name) extern const slim_command slim_cmd_##name __attribute__((weak));
#include "tools/commands.def"
#undef SLIM_CMD

static const slim_command *const commands[] = {
#define SLIM_CMD(name) &slim_cmd_##name,
#include "tools/commands.def"
#undef SLIM_CMD
};

static void usage(FILE *f)
{
    fprintf(f, "usage: slimrun COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (commands[i])
            fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\n'slimrun COMMAND --help' (or 'slimrun help COMMAND') describes a command's "
               "flags.\n"
               "'slimrun --version' prints the version.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc > 2) { /* slimrun help CMD: slimrun CMD --help */
        for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
            if (commands[i] && !strcmp(commands[i]->name, argv[2])) {
                char *av[] = {argv[2], "--help", NULL};
                return commands[i]->run(2, av);
            }
        fprintf(stderr, "slimrun help: unknown command '%s'\n\n", argv[2]);
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("slimrun %s (slim ABI %d.%d)\n", slim_version(), SLIM_ABI_MAJOR, SLIM_ABI_MINOR);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (commands[i] && !strcmp(commands[i]->name, argv[1]))
            return commands[i]->run(argc - 1, argv + 1);
    fprintf(stderr, "slimrun: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
