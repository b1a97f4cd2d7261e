/* A long double read from a line of stdin (C11 7.22.1.3 strtold): how many bytes it took, its
 * sign and size, whether it is whole, and its integer part. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char line[8] = {0};
    if (!fgets(line, sizeof line, stdin)) return 2;
    char *end = NULL;
    errno = 0;
    long double v = strtold(line, &end);
    long took = end - line;
    if (took == 0) {
        puts("not a number");
        return 3;
    }
    if (v < 0) puts("below zero");
    else if (v > 1000) puts("large");
    else if (v * 2 == 1) puts("one half");
    printf("took %ld, whole part %lld\n", took, (long long)v);
    return v == (long long)v ? 0 : 1;
}
