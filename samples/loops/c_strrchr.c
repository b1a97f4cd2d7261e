/* strrchr (C 7.24.5.5): last 'c'. Exit: index, 200 if absent. */
#include "harness.h"
static char *my_strrchr(const char *s, int c) {
    const char *last = 0;
    do { if (*s == (char)c) last = s; } while (*s++);
    return (char *)last;
}
int main(void) {
    char buf[M + 1]; size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    char *p = my_strrchr(buf, 'c');
    return p ? (int)(p - buf) : 200;
}
