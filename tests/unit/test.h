/*
 * test.h -- a minimal unit-test harness: TEST(name) { ... ASSERT...; } and a main() built from
 * TEST_MAIN(list of RUN(name)). A failed ASSERT reports file:line and the values, ends that test and
 * marks the binary failed; every test still runs. Ends with "N passed, M failed".
 */
#ifndef INGOT_TEST_H
#define INGOT_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failed_;
static int test_n_pass_, test_n_fail_;

#define TEST(name) static void name(void)

#define TEST_FAIL_(...)                                        \
    do {                                                       \
        fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                          \
        fprintf(stderr, "\n");                                 \
        test_failed_ = 1;                                      \
        return;                                                \
    } while (0)

#define ASSERT(c)                       \
    do {                                \
        if (!(c)) TEST_FAIL_("%s", #c); \
    } while (0)
#define ASSERT_EQ(a, b)                                                      \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (a_ != b_) TEST_FAIL_("%s == %s (%lld vs %lld)", #a, #b, a_, b_); \
    } while (0)
#define ASSERT_STREQ(a, b)                                                                             \
    do {                                                                                               \
        const char *a_ = (a), *b_ = (b);                                                               \
        if (!a_ || !b_ || strcmp(a_, b_))                                                              \
            TEST_FAIL_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)
#define ASSERT_CONTAINS(hay, needle)                                                                      \
    do {                                                                                                  \
        const char *h_ = (hay), *n_ = (needle);                                                           \
        if (!h_ || !strstr(h_, n_)) TEST_FAIL_("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_); \
    } while (0)
#define ASSERT_NEAR(a, b, tol)                                                                                       \
    do {                                                                                                             \
        double a_ = (double)(a), b_ = (double)(b);                                                                   \
        if (!(fabs(a_ - b_) <= (tol))) TEST_FAIL_("%s ~= %s (%.9g vs %.9g, tol %g)", #a, #b, a_, b_, (double)(tol)); \
    } while (0)

#define RUN(name)                                  \
    do {                                           \
        test_failed_ = 0;                          \
        name();                                    \
        if (test_failed_) {                        \
            test_n_fail_++;                        \
            fprintf(stderr, "not ok %s\n", #name); \
        } else {                                   \
            test_n_pass_++;                        \
        }                                          \
    } while (0)

#define TEST_MAIN(...)                                                \
    int main(void)                                                    \
    {                                                                 \
        __VA_ARGS__;                                                  \
        printf("%d passed, %d failed\n", test_n_pass_, test_n_fail_); \
        return test_n_fail_ ? 1 : 0;                                  \
    }

#endif
