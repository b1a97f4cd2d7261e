/* argv[1] copied into a buffer sized by its length (gnulib's xstrdup: malloc(strlen + 1), then
 * memcpy), that copy copied again the same way, then read by the string functions that stop at
 * its NUL (C11 7.24.4 and 7.24.5):
 * strcspn, strspn, strchr, strcoll (the C locale: strcmp's order, bytes as unsigned char),
 * strcmp and strtol. Debian's expr answers "index" and "<=" so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sign(int v) { return (v > 0) - (v < 0); }

int main(int argc, char **argv) {
    if (argc < 2) return 9;
    size_t n = strlen(argv[1]);
    char *p = malloc(n + 1);
    if (!p) return 8;
    memcpy(p, argv[1], n + 1);
    char *q = malloc(n + 1);
    if (!q) return 8;
    memcpy(q, p, n + 1);
    p = q;
    size_t reject = strcspn(p, "\x80z");
    size_t accept = strspn(p, "0123456789");
    char *colon = strchr(p, ':');
    int coll = sign(strcoll(p, "\x7f"));
    int cmp = sign(strcmp("a", p));
    long v = strtol(p, NULL, 10);
    printf("%zu %zu %ld %d %d %ld\n", reject, accept, colon ? (long)(colon - p) : -1L, coll, cmp, v % 7);
    return (int)n;
}
