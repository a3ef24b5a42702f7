/*
 * external.c -- files: mapping the model, and external tensor data next to it.
 *
 * A model file is mapped read-only (or read, when the caller turns mapping off) and stays so while
 * the graph references its bytes. External data files are resolved relative to the model's folder and
 * must stay inside it: absolute locations and ".." components are refused outright, and the resolved
 * real path (symlinks followed) must lie under the folder's real path. Each file is mapped once, whole,
 * with 64-bit sizes and offsets throughout, so data past 2 GiB (or 4 GiB) is reachable.
 */
#define _XOPEN_SOURCE     700
#define _FILE_OFFSET_BITS 64
#include "import.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void ig__onnx_blob_close(ig_onnx_blob *blob)
{
    if (!blob) return;
    if (blob->map) munmap(blob->map, blob->size);
    ig__free(blob->heap);
    ig__free(blob->path);
    memset(blob, 0, sizeof *blob);
}

/* Read exactly n bytes from fd at its current position, in chunks (read() may return less, and at
 * most about 2 GiB per call on Linux). */
static bool read_all(int fd, uint8_t *dst, size_t n)
{
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t r = read(fd, dst, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        dst += r;
        n -= (size_t)r;
    }
    return true;
}

ingot_status ig__onnx_blob_open(const char *path, bool use_mmap, const char *what, ig_onnx_blob *blob, ig_err *err)
{
    memset(blob, 0, sizeof *blob);
    /* O_NONBLOCK: a FIFO or a device would block open() (a FIFO until a writer comes) before fstat
     * could refuse it; on a regular file the flag changes nothing */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ig__errf(err, INGOT_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(errno));
    ingot_status st = INGOT_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = ig__errf(err, INGOT_ERR_IO, "cannot stat %s '%s': %s", what, path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = ig__errf(err, INGOT_ERR_IO, "%s '%s' is not a regular file (%s)", what, path,
                      S_ISDIR(sb.st_mode)                          ? "a directory"
                      : S_ISFIFO(sb.st_mode)                       ? "a FIFO"
                      : S_ISSOCK(sb.st_mode)                       ? "a socket"
                      : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                                                                   : "not a plain file");
        goto out;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
        st = ig__errf(err, INGOT_ERR_IO, "%s '%s' is too large to map (%" PRId64 " bytes)", what, path,
                      (int64_t)sb.st_size);
        goto out;
    }
    blob->size = (size_t)sb.st_size;
    if (blob->size == 0) goto out; /* nothing to map; data stays NULL */
    if (use_mmap) {
        void *p = mmap(NULL, blob->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            st = ig__errf(err, INGOT_ERR_IO, "cannot map %s '%s' (%zu bytes): %s", what, path, blob->size,
                          strerror(errno));
            goto out;
        }
        blob->map = p;
        blob->data = p;
    } else {
        blob->heap = ig__malloc(blob->size);
        if (!blob->heap) {
            st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory reading %s '%s' (%zu bytes)", what, path,
                          blob->size);
            goto out;
        }
        if (!read_all(fd, blob->heap, blob->size)) {
            st = ig__errf(err, INGOT_ERR_IO, "cannot read %s '%s' (%zu bytes): %s", what, path, blob->size,
                          errno ? strerror(errno) : "file shrank while reading");
            goto out;
        }
        blob->data = blob->heap;
    }
out:
    close(fd);
    if (st) ig__onnx_blob_close(blob);
    return st;
}

/* Is location a plain relative path: not absolute, no "." / ".." / empty components that could
 * climb out, nothing but what a file name next to the model needs? */
static const char *location_problem(const char *loc)
{
    if (!loc[0]) return "is empty";
    if (loc[0] == '/') return "is an absolute path";
    if (loc[0] == '\\' || (loc[0] && loc[1] == ':')) return "looks like an absolute Windows path";
    for (const char *p = loc; *p;) {
        const char *e = p;
        while (*e && *e != '/' && *e != '\\') e++;
        size_t n = (size_t)(e - p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return "contains a '..' component";
        p = *e ? e + 1 : e;
    }
    return NULL;
}

ingot_status ig__onnx_external(ig_onnx_imp *im, const char *tensor, const char *location, uint64_t offset,
                               bool has_length, uint64_t length, const uint8_t **data, size_t *n_bytes)
{
    ig_pb_ctx *c = &im->pb;
    ig_onnx_file *file = im->file;
    if (file && file->embedded) { /* an engine file: the weights section, nothing else */
        if (strcmp(location, IG_ONNX_EMBEDDED) != 0)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "tensor '%.200s': external data location '%.200s' in an engine file (only '%s', "
                               "the weights section, is allowed)",
                               tensor, location, IG_ONNX_EMBEDDED);
        if (offset > file->weights_size || (has_length && length > file->weights_size - offset))
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "tensor '%.200s': %" PRIu64 " bytes at offset %" PRIu64
                               " run past the end of the weights section (%zu bytes)",
                               tensor, has_length ? length : 0, offset, file->weights_size);
        size_t n = has_length ? (size_t)length : file->weights_size - (size_t)offset;
        *data = n ? file->weights + offset : NULL;
        *n_bytes = n;
        return INGOT_OK;
    }
    if (!file || !file->dir)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "tensor '%.200s' keeps its data in external file '%.200s', but the model was loaded "
                           "from memory without a base folder for external data",
                           tensor, location);
    const char *why = location_problem(location);
    if (why)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "tensor '%.200s': external data location '%.200s' %s; it must be a path relative to "
                           "the model's folder that stays inside it",
                           tensor, location, why);
    size_t dl = strlen(file->dir), ll = strlen(location);
    char *joined = ig__malloc(dl + ll + 2);
    if (!joined) return ig__errf(c->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory resolving external data");
    memcpy(joined, file->dir, dl);
    joined[dl] = '/';
    memcpy(joined + dl + 1, location, ll + 1);
    char *real = realpath(joined, NULL);
    if (!real) {
        int e = errno;
        ingot_status st =
            ig__pb_errf(c, INGOT_ERR_IO, NULL, "tensor '%.200s': external data file '%.200s' (%.300s): %s", tensor,
                        location, joined, e == ENOENT ? "file not found" : strerror(e));
        ig__free(joined);
        return st;
    }
    ig__free(joined);
    /* the resolved file must lie strictly under the folder (a symlink may point anywhere) */
    bool root = dl == 1 && file->dir[0] == '/';
    if (strncmp(real, file->dir, dl) != 0 || (!root && real[dl] != '/') || !real[root ? 1 : dl + 1]) {
        ingot_status st = ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                      "tensor '%.200s': external data location '%.200s' resolves to '%.300s', "
                                      "outside the model's folder '%.300s'",
                                      tensor, location, real, file->dir);
        free(real);
        return st;
    }
    ig_onnx_blob *blob = NULL;
    for (int32_t i = 0; i < file->n_ext && !blob; i++)
        if (!strcmp(file->ext[i].path, real)) blob = &file->ext[i];
    if (!blob) {
        if (file->n_ext == file->cap_ext) {
            int32_t cap = file->cap_ext ? file->cap_ext * 2 : 4;
            ig_onnx_blob *nb = ig__realloc(file->ext, sizeof *nb * (size_t)cap);
            if (!nb) {
                free(real);
                return ig__errf(c->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory mapping external data");
            }
            file->ext = nb;
            file->cap_ext = cap;
        }
        ig_onnx_blob nb;
        ingot_status st = ig__onnx_blob_open(real, file->opt.use_mmap, "external data file", &nb, c->err);
        if (st) {
            free(real);
            ig__err_prefix(c->err, "%s: tensor '%.200s'", c->path, tensor);
            return st;
        }
        nb.path = ig__malloc(strlen(real) + 1);
        if (!nb.path) {
            free(real);
            ig__onnx_blob_close(&nb);
            return ig__errf(c->err, INGOT_ERR_OUT_OF_MEMORY, "out of memory mapping external data");
        }
        strcpy(nb.path, real);
        file->ext[file->n_ext] = nb;
        blob = &file->ext[file->n_ext++];
    }
    free(real);
    uint64_t size = blob->size;
    if (offset > size || (has_length && length > size - offset))
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "tensor '%.200s': external data at offset %" PRIu64 " with length %" PRIu64
                           " runs past the end of file '%.200s' (%" PRIu64 " bytes)",
                           tensor, offset, has_length ? length : 0, location, size);
    size_t n = has_length ? (size_t)length : (size_t)(size - offset);
    *data = n ? blob->data + offset : NULL;
    *n_bytes = n;
    return INGOT_OK;
}
