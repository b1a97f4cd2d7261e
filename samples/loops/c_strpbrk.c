/* strpbrk (C standard 7.24.5.4): the first character of s that is in accept, or a null pointer.
 * Exit: its index, or M + 1. */
#include "harness.h"

__attribute__((noinline)) char *c_strpbrk(const char *s, const char *accept) {
    for (; *s; s++)
        for (const char *a = accept; *a; a++)
            if (*a == *s) return (char *)s;
    return NULL;
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    char *hit = c_strpbrk(buf, "xy");
    return hit ? (int)(hit - buf) : M + 1;
}
