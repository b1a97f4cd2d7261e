/* strcspn (C standard 7.24.5.3): the length of the maximum initial segment of s consisting
 * entirely of characters not from reject. */
#include "harness.h"

__attribute__((noinline)) size_t c_strcspn(const char *s, const char *reject) {
    const char *p = s;
    while (*p) {
        const char *r = reject;
        while (*r && *r != *p) r++;
        if (*r) break;
        p++;
    }
    return (size_t)(p - s);
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    return (int)c_strcspn(buf, "ab");
}
