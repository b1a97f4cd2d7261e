/* strchr (C standard 7.24.5.2): the first occurrence of c (converted to char) in s, where the
 * terminating null character counts as part of the string. Exit: index of 'c' or M + 1. */
#include "harness.h"

__attribute__((noinline)) char *c_strchr(const char *s, int c) {
    for (;; s++) {
        if (*s == (char)c) return (char *)s;
        if (!*s) return NULL;
    }
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    char *hit = c_strchr(buf, 'c');
    return hit ? (int)(hit - buf) : M + 1;
}
