/*
 * check_malformed.c -- load every file of the malformed-model corpus through the public API and
 * require an error whose message contains the expected text (cases.txt: file<TAB>substring).
 * Each file is loaded three ways: ingot_model_load mapped, ingot_model_load reading the file, and
 * ingot_model_load_buffer with the file's folder as base_dir. A crash or hang fails the CTest run.
 *
 *     check_malformed CASES_TXT CORPUS_DIR [-v]
 */
#define _XOPEN_SOURCE 700
#include "ingot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

/* 0 when the load failed with a message containing want */
static int check_one(ingot_runtime *rt, const char *how, ingot_status st, ingot_model *m, const char *file,
                     const char *want, int verbose)
{
    if (st == INGOT_OK) {
        fprintf(stderr, "FAIL %s (%s): loaded without error; expected \"%s\"\n", file, how, want);
        ingot_model_destroy(m);
        return 1;
    }
    const char *msg = ingot_runtime_errmsg(rt);
    if (!strstr(msg, want)) {
        fprintf(stderr, "FAIL %s (%s): %s: %s\n     expected the message to contain \"%s\"\n", file, how,
                ingot_status_name(st), msg, want);
        return 1;
    }
    if (verbose) printf("ok   %s (%s): %s: %s\n", file, how, ingot_status_name(st), msg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASES_TXT CORPUS_DIR [-v]\n", argv[0]);
        return 2;
    }
    int verbose = argc > 3 && !strcmp(argv[3], "-v");
    FILE *cf = fopen(argv[1], "r");
    if (!cf) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    ingot_runtime *rt = NULL;
    if (ingot_runtime_create(&rt) != INGOT_OK) return 2;
    ingot_log_set(NULL, NULL);
    char line[2048];
    int n_cases = 0, n_fail = 0;
    while (fgets(line, sizeof line, cf)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *tab = strchr(line, '\t');
        if (!tab) {
            fprintf(stderr, "cases.txt: no tab in line '%s'\n", line);
            n_fail++;
            continue;
        }
        *tab = '\0';
        const char *file = line, *want = tab + 1;
        char path[4096], dir[4096];
        snprintf(path, sizeof path, "%s/%s", argv[2], file);
        snprintf(dir, sizeof dir, "%s", path);
        *strrchr(dir, '/') = '\0';
        n_cases++;

        ingot_model *m = NULL;
        ingot_load_options lo = ingot_load_options_default();
        ingot_status st = ingot_model_load(rt, path, &lo, &m);
        int bad = check_one(rt, "mapped", st, m, file, want, verbose);
        lo.use_mmap = 0;
        m = NULL;
        st = ingot_model_load(rt, path, &lo, &m);
        bad |= check_one(rt, "read", st, m, file, want, verbose);
        size_t n = 0;
        unsigned char *buf = read_whole(path, &n);
        if (!buf) {
            fprintf(stderr, "FAIL %s: cannot read the file (was the corpus generated?)\n", file);
            bad = 1;
        } else {
            m = NULL;
            st = ingot_model_load_buffer(rt, buf, n, dir, NULL, &m);
            bad |= check_one(rt, "buffer", st, m, file, want, verbose);
            free(buf);
        }
        n_fail += bad;
    }
    fclose(cf);
    ingot_runtime_destroy(rt);
    printf("malformed corpus: %d cases, %d passed, %d failed\n", n_cases, n_cases - n_fail, n_fail);
    return n_fail || n_cases == 0 ? 1 : 0;
}
