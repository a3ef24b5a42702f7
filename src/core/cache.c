/*
 * cache.c -- ingot's cache folder and its files: $INGOT_CACHE_DIR, else $XDG_CACHE_HOME/ingot, else
 * ~/.cache/ingot. The measured device ceilings (src/diag) and the compiled elementwise kernels
 * (src/cuda/ew_jit.c) live there. A cache is an optimisation: every failure here means "not cached",
 * never an error, and what is read back is checked by its user before it is trusted.
 */
#define _POSIX_C_SOURCE 200809L
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p for the one or two levels a cache folder needs. */
static bool make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int r = mkdir(path, 0755);
        *p = '/';
        if (r != 0 && errno != EEXIST) return false;
    }
    return mkdir(path, 0755) == 0 || errno == EEXIST;
}

bool ig__cache_dir(char *buf, size_t n)
{
    const char *d = getenv("INGOT_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w;
    if (d && *d)
        w = snprintf(buf, n, "%s", d);
    else if (x && *x)
        w = snprintf(buf, n, "%s/ingot", x);
    else if (home && *home)
        w = snprintf(buf, n, "%s/.cache/ingot", home);
    else
        return false;
    return w > 0 && (size_t)w < n && make_dirs(buf);
}

static bool cache_path(const char *name, char *buf, size_t n)
{
    char dir[900];
    if (!ig__cache_dir(dir, sizeof dir)) return false;
    int w = snprintf(buf, n, "%s/%s", dir, name);
    return w > 0 && (size_t)w < n;
}

void *ig__cache_get(const char *name, size_t max, size_t *n)
{
    char path[1024];
    *n = 0;
    if (!cache_path(name, path, sizeof path)) return NULL;
    /* O_NONBLOCK: a FIFO planted under the name must not block open(); fstat then refuses it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat sb;
    unsigned char *data = NULL;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && (uint64_t)sb.st_size <= max &&
        (data = ig__malloc((size_t)sb.st_size))) {
        size_t got = 0;
        while (got < (size_t)sb.st_size) {
            ssize_t r = read(fd, data + got, (size_t)sb.st_size - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got == (size_t)sb.st_size) {
            *n = got;
        } else {
            ig__free(data);
            data = NULL;
        }
    }
    close(fd);
    return data;
}

bool ig__cache_put(const char *name, const void *data, size_t n)
{
    char path[1024], tmp[1100];
    if (!cache_path(name, path, sizeof path)) return false;
    /* written aside and renamed: a reader sees the old file or the whole new one, never a part */
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) == 0) return true;
    remove(tmp);
    return false;
}
