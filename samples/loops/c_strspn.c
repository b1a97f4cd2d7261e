/* strspn as the C standard (7.24.5.6) describes it: the length of the maximum initial segment of
 * s consisting entirely of characters from accept. Outer loop over s, inner loop over accept. */
#include "harness.h"

__attribute__((noinline)) size_t c_strspn(const char *s, const char *accept) {
    size_t len = 0;
    for (; s[len] != '\0'; len++) {
        const char *a;
        for (a = accept; *a != '\0'; a++)
            if (*a == s[len]) break;
        if (*a == '\0') break;
    }
    return len;
}

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    return (int)c_strspn(buf, "ab");
}
