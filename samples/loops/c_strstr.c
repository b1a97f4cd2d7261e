/* strstr (C 7.24.5.7): first occurrence of "aba" in the input. Exit: position, 200 if absent. */
#include "harness.h"
static char *my_strstr(const char *h, const char *nd) {
    if (!*nd) return (char *)h;
    for (; *h; h++) {
        const char *a = h, *b = nd;
        while (*a && *b && *a == *b) { a++; b++; }
        if (!*b) return (char *)h;
    }
    return 0;
}
int main(void) {
    char buf[M + 1]; size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    char *p = my_strstr(buf, "aba");
    return p ? (int)(p - buf) : 200;
}
