/* memchr (C standard 7.24.5.1): the first occurrence of c (as unsigned char) in the first n
 * characters of s. Exit: its index, or M + 1. */
#include "harness.h"

__attribute__((noinline)) void *c_memchr(const void *s, int c, size_t n) {
    const unsigned char *p = s;
    for (size_t i = 0; i < n; i++)
        if (p[i] == (unsigned char)c) return (void *)(p + i);
    return NULL;
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    char *hit = c_memchr(buf, 'c', n);
    return hit ? (int)(hit - buf) : M + 1;
}
