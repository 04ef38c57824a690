/* tests/ops/test_ops.c - runs every family of op cases (each cases_*.c file
 * registers its own, see harness.h) and checks that every registered op is
 * covered by at least one case. TAP output. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;       /* run one family: test_ops conv */
    const char *cases_with = argc > 2 ? argv[2] : NULL; /* and its cases named *wino* */
    slim_registry *reg;
    slim_error err = {0};
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! registry: %s\n", err.msg);
        return 1;
    }
    int n_families;
    const harness_family *const *families = harness_families(&n_families);
    int n_cases = 0;
    for (int f = 0; f < n_families; f++) {
        const harness_family *fam = families[f];
        if (only && strcmp(only, fam->name) != 0)
            continue;
        harness_diag("family %s: %d cases", fam->name, fam->n_cases);
        for (int i = 0; i < fam->n_cases; i++) {
            if (cases_with && !strstr(fam->cases[i].name, cases_with))
                continue;
            harness_run(reg, &fam->cases[i]);
            n_cases++;
        }
        if (fam->extra && !cases_with)
            fam->extra(reg);
    }
    if (!only) {
        /* every registered op has at least one case */
        for (int k = 0; k < slim_registry_count(reg); k++) {
            const slim_op_desc *d = slim_registry_at(reg, k);
            bool covered = false;
            for (int f = 0; f < n_families && !covered; f++)
                for (int i = 0; i < families[f]->n_cases && !covered; i++)
                    covered = strcmp(families[f]->cases[i].op, d->name) == 0;
            harness_ok(covered, "op %s is covered by the harness", d->name);
        }
    }
    harness_diag("op harness: %d ops registered, %d cases, %d checks, %d failed",
                 slim_registry_count(reg), n_cases, harness_count(), harness_failures());
    printf("1..%d\n", harness_count());
    slim_registry_free(reg);
    return harness_failures() ? 1 : 0;
}
