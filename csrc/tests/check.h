/* rankmap C unit tests: a minimal check macro (no framework). Each test program returns
 * non-zero when any check failed; CTest reports it. */
#ifndef RM_TEST_CHECK_H
#define RM_TEST_CHECK_H
#include <stdio.h>

static int rm_failures;
static int rm_checks;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        rm_checks++;                                                          \
        if (!(cond)) {                                                        \
            rm_failures++;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

static inline int rm_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, rm_checks, rm_failures);
    return rm_failures != 0;
}
#endif
