/*
 * report_html.c -- the self-contained HTML report: src/diag/report.html (embedded at build as
 * ig__diag_html_template, see src/CMakeLists.txt) with the profile's JSON where its marker is. The page's
 * own script draws the roofline, the class and memory bars and the sweep from that JSON; nothing is
 * fetched from the network.
 */
#include "diag.h"

#include <string.h>

extern const unsigned char ig__diag_html_template[];
extern const size_t ig__diag_html_template_size;

#define MARKER "@INGOT_DATA@"

bool ig__diag_write_html(const ig_diag_report *r, FILE *f)
{
    const char *t = (const char *)ig__diag_html_template;
    size_t n = ig__diag_html_template_size, m = strlen(MARKER), at = n;
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(t + i, MARKER, m)) {
            at = i;
            break;
        }
    if (at == n) return false; /* a template without its marker: a build error, reported as a failed write */
    fwrite(t, 1, at, f);
    if (!ig__diag_write_json(r, f)) return false;
    fwrite(t + at + m, 1, n - at - m, f);
    return !ferror(f);
}
